package policy

import (
	"regexp"
	"slices"
	"strings"
)

// sqlArgs extracts the SQL a database client is given on its command line.
// stdin reports whether it reads SQL from standard input instead.
type sqlArgs func(args []arg) (sql []arg, stdin bool)

// sqlClients are the database clients whose SQL the detector reads.
var sqlClients = map[string]sqlArgs{
	"psql":              psqlSQL,
	"gitlab-psql":       psqlSQL, // GitLab Omnibus's psql wrapper
	"ysqlsh":            psqlSQL, // YugabyteDB's psql
	"mysql":             optionSQL(optSpec{short: "eDhPSuO", long: []string{"execute", "database", "host", "port", "socket", "user", "default-character-set", "init-command"}}, "e", "execute", "init-command", ""),
	"mariadb":           optionSQL(optSpec{short: "eDhPSuO", long: []string{"execute", "database", "host", "port", "socket", "user", "default-character-set", "init-command"}}, "e", "execute", "init-command", ""),
	"clickhouse-client": optionSQL(optSpec{short: "qhdu", long: []string{"query", "host", "port", "user", "password", "database", "format"}}, "q", "query", "", ""),
	"sqlcmd":            optionSQL(optSpec{short: "SUPdQqiolsvHAWhtwcf", long: nil}, "Q", "", "q", "i"),
	"snowsql":           optionSQL(optSpec{short: "acdqrswuohf", long: []string{"accountname", "config", "dbname", "query", "rolename", "schemaname", "warehouse", "username", "option", "filename", "connection", "host", "port"}}, "q", "query", "", "f"),
	"cqlsh":             optionSQL(optSpec{short: "eukpf", long: []string{"execute", "username", "keyspace", "password", "file", "cqlversion", "encoding", "request-timeout", "connect-timeout", "cqlshrc"}}, "e", "execute", "", "f"),
	"clickhouse":        subcommandSQL("client", optSpec{short: "qhdu", long: []string{"query", "host", "port", "user", "password", "database", "format"}}, "q", "query"),
	"cockroach":         subcommandSQL("sql", optSpec{short: "edf", long: []string{"execute", "database", "url", "host", "user", "certs-dir", "format", "file"}}, "e", "execute"),
	"bq":                bqSQL,
	"influx":            influxQL,
	"mycli":             optionSQL(optSpec{short: "ehPuSDp", long: []string{"execute", "host", "port", "user", "socket", "database", "password", "login-path", "defaults-group-suffix", "defaults-file", "ssl-ca", "ssl-cert", "ssl-key"}}, "e", "execute", "", ""),
	"litecli":           optionSQL(optSpec{short: "eD", long: []string{"execute", "database", "liteclirc", "prompt", "logfile"}}, "e", "execute", "", ""),
	"usql":              optionSQL(optSpec{short: "cfoJ", long: []string{"command", "file", "out", "set", "variable", "config"}}, "c", "command", "", "f"),
	"beeline":           optionSQL(optSpec{short: "eufnpdi", long: []string{"hiveconf", "hivevar", "property-file"}}, "e", "", "", "f"),
	"hive":              optionSQL(optSpec{short: "efdi", long: []string{"database", "hiveconf", "hivevar", "define"}}, "e", "", "", "f"),
	"spark-sql":         optionSQL(optSpec{short: "efi", long: []string{"database", "master", "conf", "name", "jars"}}, "e", "", "", "f"),
	"mysqlsh":           optionSQL(optSpec{short: "euhPpSDfm", long: []string{"execute", "user", "host", "port", "password", "socket", "schema", "database", "file", "uri", "log-level"}}, "e", "execute", "", "f"),
	"trino":             optionSQL(optSpec{short: "f", long: []string{"server", "catalog", "schema", "user", "execute", "file", "output-format", "session", "source", "password"}}, "", "execute", "", "f"),
	"presto":            optionSQL(optSpec{short: "f", long: []string{"server", "catalog", "schema", "user", "execute", "file", "output-format", "session", "source"}}, "", "execute", "", "f"),
	"impala-shell":      optionSQL(optSpec{short: "qfidu", long: []string{"query", "query_file", "impalad", "database", "user"}}, "q", "query", "", "f"),
	"cbq":               optionSQL(optSpec{short: "seupf", long: []string{"script", "engine", "user", "password", "file", "credentials"}}, "s", "script", "", "f"),
	"vsql":              optionSQL(optSpec{short: "cdfhpUw", long: []string{"command", "dbname", "file", "host", "port", "username", "password"}}, "c", "command", "", "f"),
	"turso":             tursoSQL,
	"prisma":            prismaSQL,
	"wrangler":          wranglerSQL,
	"sqlplus":           optionSQL(optSpec{short: "sLMRc", long: nil}, "", "", "", ""), // a script on stdin (a heredoc)
	"sqlite3":           positionalSQL,
	"duckdb":            positionalSQL,
	"gcloud":            spannerSQL,
}

// psqlSQL reads psql's -c and -f, and its fork ysqlsh's.
var psqlSQL = optionSQL(optSpec{short: "cdfhpUvLoTFRPS", long: []string{"command", "dbname", "file", "host", "port", "username", "set", "variable", "log-file", "output", "table-attr", "field-separator", "record-separator", "pset"}}, "c", "command", "", "f")

// optionSQL reads SQL from options (psql -c, mysql -e); a file option
// (psql -f) means the SQL is in a file; otherwise it is read from stdin.
func optionSQL(spec optSpec, short, long, extra, fileShort string) sqlArgs {
	return func(args []arg) ([]arg, bool) {
		_, opts := operands(args, spec)
		var sql []arg
		file := false
		for _, o := range opts {
			switch o.name {
			case short, long, extra:
				if o.name != "" {
					sql = append(sql, o.value)
				}
			case fileShort, "file":
				// -f - (and --file=-) is standard input.
				file = o.name != "" && o.value.val != "-"
			}
		}
		return sql, len(sql) == 0 && !file
	}
}

// tursoSQL reads the SQL of turso db shell DB SQL...; without SQL the
// shell reads it from stdin.
func tursoSQL(args []arg) ([]arg, bool) {
	ops, _ := operands(args, optSpec{long: []string{"instance", "location", "config-path"}})
	if len(ops) < 3 || ops[0].val != "db" || ops[1].val != "shell" {
		return nil, false
	}
	return ops[3:], len(ops) == 3
}

// subcommandSQL reads SQL from options of one subcommand (cockroach sql -e).
func subcommandSQL(sub string, spec optSpec, short, long string) sqlArgs {
	inner := optionSQL(spec, short, long, "", "f")
	return func(args []arg) ([]arg, bool) {
		ops, _ := operands(args, spec)
		if len(ops) == 0 || ops[0].val != sub {
			return nil, false
		}
		return inner(args)
	}
}

// prismaSQL reads the SQL of prisma db execute: with --stdin, its stdin
// (the script's SQL is in a file with --file).
func prismaSQL(args []arg) ([]arg, bool) {
	ops, opts := operands(args, optSpec{long: []string{"schema", "url", "file", "datasource"}})
	if len(ops) < 2 || ops[0].val != "db" || ops[1].val != "execute" {
		return nil, false
	}
	return nil, hasOpt(opts, "stdin")
}

// wranglerSQL reads the SQL of wrangler d1 execute DB --command SQL.
func wranglerSQL(args []arg) ([]arg, bool) {
	ops, opts := operands(args, optSpec{long: []string{"command", "file", "config", "env", "persist-to", "database"}, short: "ce"})
	if len(ops) < 2 || ops[0].val != "d1" || ops[1].val != "execute" {
		return nil, false
	}
	var sql []arg
	for _, o := range opts {
		if o.name == "command" {
			sql = append(sql, o.value)
		}
	}
	return sql, false
}

// bqSQL reads the SQL of bq query: its operands after "query".
func bqSQL(args []arg) ([]arg, bool) {
	ops, _ := operands(args, optSpec{long: []string{"project_id", "dataset_id", "location", "format", "parameter", "destination_table", "max_rows"}})
	if len(ops) == 0 || ops[0].val != "query" {
		return nil, false
	}
	for _, a := range args {
		if a.lit && (a.val == "--dry_run" || a.val == "--dry_run=true") {
			return nil, false // validated, not run
		}
	}
	return ops[1:], len(ops) == 1
}

// spannerSQL reads the statements of gcloud spanner databases execute-sql
// --sql and ddl update --ddl; every other gcloud call runs no SQL.
func spannerSQL(args []arg) ([]arg, bool) {
	spec := optSpec{long: []string{"instance", "project", "sql", "ddl", "ddl-file", "query-mode", "format", "timeout", "priority",
		"database-role", "impersonate-service-account", "configuration", "account", "verbosity"}}
	ops, opts := operands(args, spec)
	if len(ops) < 3 || ops[0].val != "spanner" || ops[1].val != "databases" || ops[2].val != "execute-sql" && ops[2].val != "ddl" {
		return nil, false
	}
	var sql []arg
	for _, o := range opts {
		if o.name == "sql" || o.name == "ddl" {
			sql = append(sql, o.value)
		}
	}
	return sql, false
}

// influxQL reads the statements of influx (1.x) -execute.
func influxQL(args []arg) ([]arg, bool) {
	for i, a := range args {
		if a.lit && (a.val == "-execute" || a.val == "--execute") && i+1 < len(args) {
			return []arg{args[i+1]}, false
		}
	}
	return nil, false
}

// positionalSQL reads sqlite3/duckdb's SQL: -cmd/-c values and the operands
// after the database file; with none, stdin.
func positionalSQL(args []arg) ([]arg, bool) {
	var sql, ops []arg
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.lit || !strings.HasPrefix(a.val, "-") || a.val == "-":
			ops = append(ops, a)
		case a.val == "-cmd" || a.val == "-c" || a.val == "-s":
			if i+1 < len(args) {
				sql = append(sql, args[i+1])
				i++
			}
		case a.val == "-init" || a.val == "-separator" || a.val == "-nullvalue" || a.val == "-newline" ||
			a.val == "-mmap" || a.val == "-vfs" || a.val == "-maxsize" || a.val == "-escape" || a.val == "-f":
			i++
		}
	}
	if len(ops) > 1 {
		sql = append(sql, ops[1:]...)
	}
	return sql, len(sql) == 0
}

// sqlClient judges the SQL a database client runs.
func (w *walker) sqlClient(c *command) {
	sql, stdin := sqlClients[c.name](c.args)
	if c.name == "gcloud" && len(sql) == 0 {
		return // a gcloud call other than Spanner's SQL: its --file is no script
	}
	if !stdin && (ephemeralSQL(c, sql) || dropsScratchDB(c, sql)) {
		return
	}
	for _, s := range sql {
		w.runCode(c, langSQL, argCode(s), c.name, c.sp, nil, false)
	}
	w.sqlFiles(c)
	if stdin {
		w.stdinCode(c, langSQL, nil)
	}
}

// ephemeralSQL reports sqlite3 or duckdb statements that only touch an
// in-memory database (sqlite3 :memory:, duckdb -c without a database
// file): dropping its tables destroys nothing. SQL that attaches or opens
// a file, or a dot-command (.shell, .open, .import), does not count.
func ephemeralSQL(c *command, sql []arg) bool {
	if c.name != "sqlite3" && c.name != "duckdb" || len(sql) == 0 {
		return false
	}
	var db []arg
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit:
			return false
		case a.val == "-cmd" || a.val == "-c" || a.val == "-s" || a.val == "-init" || a.val == "-f":
			i++
		case !strings.HasPrefix(a.val, "-"):
			db = append(db, a)
		}
	}
	memory := len(db) > 0 && (db[0].val == ":memory:" || tmpFile(db[0].val)) || c.name == "duckdb" && len(db) == 0
	if !memory {
		return false
	}
	for _, s := range sql {
		if !s.lit || ephemeralEscape.MatchString(s.val) {
			return false
		}
	}
	return true
}

// ephemeralEscape is SQL that reaches beyond an in-memory database.
var ephemeralEscape = regexp.MustCompile(`(?i)\battach\b|(^|\n|;)\s*\.|\bcopy\b|\bexport\b|\binstall\b|\bload\b|\bwrite_|\b(duckdb_)?secrets?\b`)

// matchDropDB judges dropdb and mysqladmin drop.
func matchDropDB(c *command, h *hits) {
	for _, a := range c.args {
		if a.lit && (a.val == "--help" || a.val == "--version" || a.val == "-?" || a.val == "-V") {
			return
		}
	}
	if c.name == "dropdb" {
		if deletesScratch(c, "dropdb", nil) {
			return // the database createdb made on the same && chain
		}
		h.add(ruleSQLDestructive, "dropdb")
		return
	}
	for _, a := range c.args {
		if a.lit && strings.EqualFold(a.val, "drop") {
			h.add(ruleSQLDestructive, c.name+" drop")
			return
		}
	}
}

// sql judges a SQL script: each destructive statement is a finding, and
// each client command that runs a shell (psql and mysql \!, mysql system,
// sqlite3 .shell and .system) is walked as a script.
func (w *walker) sql(f *frame, client string) {
	sts := sqlStatements(f.src)
	// DDL is transactional in PostgreSQL and SQL Server: a script that
	// ends in ROLLBACK undoes what it did (MySQL's DDL commits at once)
	if client != "psql" && client != "ysqlsh" && client != "sqlcmd" || !rolledBack(f.src, sts) {
		temps := map[string]bool{}
		scratchOK := scratchSQL(f.src, sts)
		for _, st := range sts {
			if name := tempTable(st.words); name != "" {
				temps["TABLE "+name] = true
			} else if kind, name := createdObject(st.words); name != "" && scratchOK && throwawayName(strings.ToLower(name)) {
				// CREATE TABLE tmp_probe ...; DROP TABLE tmp_probe: some
				// clients go on after a failed statement (sqlcmd, sqlplus),
				// so the name must be a throwaway one, as after ";" (read
				// in lower case: SQL names ignore it, PrOducts is products)
				temps[kind+" "+name] = true
			}
			if kind, name := droppedTable(st.words); name != "" && temps[kind+" "+name] {
				continue // a temporary table the script made itself
			}
			if detail, ok := destructiveStatement(st.words); ok {
				w.d.add(f, ruleSQLDestructive, detail, "", st.sp)
			} else if col, ok := selectsSecret(st.words); ok {
				w.d.add(f, ruleSecretPrint, "SELECT of the secret column "+col, "", st.sp)
			}
		}
	}
	for _, d := range sqlServerDangers {
		if loc := d.re.FindStringIndex(f.src); loc != nil {
			w.d.add(f, ruleSQLDestructive, d.what, "", span{loc[0], loc[1]})
		}
	}
	off := 0
	for _, line := range strings.SplitAfter(f.src, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		for _, prefix := range []string{`\!`, ".shell ", ".system ", "system "} {
			if rest, ok := strings.CutPrefix(trimmed, prefix); ok {
				start := off + len(line) - len(rest)
				w.d.script(f.childIn(ShellSh, strings.TrimRight(rest, "\r\n;"), strings.TrimSpace(prefix), start, start), newEnv(), w.cond, stream{})
				break
			}
		}
		off += len(line)
	}
}

// sqlServerDangers are SQL Server statements that destroy or open up more
// than a table: the switch that lets any SQL run shell commands, a log
// backup thrown away (the chain of log backups is broken), a login made
// sysadmin.
var sqlServerDangers = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)\bsp_configure\W+xp_cmdshell\W+1\b`), "sp_configure switching xp_cmdshell on (the server runs shell commands from SQL)"},
	{regexp.MustCompile(`(?i)\bBACKUP\s+(LOG|DATABASE)\s+\S+\s+TO\s+DISK\s*=\s*N?'NUL:?'`), "BACKUP to NUL (the backup is thrown away and the log chain broken)"},
	{regexp.MustCompile(`(?i)\bVACUUM\s+\S+\s+RETAIN\s+0(\.0*)?\s+HOURS\b|\bexpire_snapshots\s*\([^)]*(retain_last\s*=>\s*1\b|retention_threshold\s*=>\s*'0[a-z]*'|older_than\s*=>\s*TIMESTAMP\s*'2[1-9]\d\d)`), "a table's history removed (VACUUM RETAIN 0 HOURS, expire_snapshots of every snapshot)"},
	{regexp.MustCompile(`(?i)\bxp_cmdshell\s+N?'`), "xp_cmdshell (the database server runs a shell command)"},
	{regexp.MustCompile(`(?i)\b(TO|FROM)\s+PROGRAM\s+(E|U&)?'`), "COPY ... PROGRAM (the database server runs a shell command)"},
	{regexp.MustCompile(`(?i)\b(pg_read_file|pg_read_binary_file|load_file)\s*\(\s*'(/|[a-z]:\\|\.\./)`), "a file of the database server's host read (pg_read_file, LOAD_FILE)"},
	{regexp.MustCompile(`(?i)\bINTO\s+(OUTFILE|DUMPFILE)\s+'(/var/www|/srv|/etc|/root|/home|/usr|/opt|[a-z]:\\inetpub|[^']*\.(php|jsp|aspx?|sh|py)')`), "SELECT ... INTO OUTFILE writing into the server's web root or system (a file it serves or runs)"},
	{regexp.MustCompile(`(?i)\b(MIN_)?DATA_RETENTION_TIME_IN_DAYS\s*=\s*0\b`), "DATA_RETENTION_TIME_IN_DAYS = 0 (Time Travel off: what is dropped or changed cannot be recovered)"},
	{regexp.MustCompile(`(?i)\bduckdb_secrets\s*\(\s*redact\s*(=|:=)\s*false`), "duckdb_secrets(redact=false) (the stored cloud credentials printed)"},
	{regexp.MustCompile(`(?i)\bALTER\s+SERVER\s+ROLE\s+\[?sysadmin\]?\s+ADD\s+MEMBER\b|\bsp_addsrvrolemember\b[^;]*\bsysadmin\b`), "a login added to the sysadmin role"},
	{regexp.MustCompile(`(?i)\bALTER\s+SYSTEM\s+SET\s+(log_statement\s*(=|TO)\s*'?none|logging_collector\s*(=|TO)\s*'?off|ssl\s*(=|TO)\s*'?off|password_encryption\s*(=|TO)\s*'?(md5|off))|\bSET\s+(GLOBAL|PERSIST)\s+(general_log|audit_log\w*|require_secure_transport|validate_password\.\w+)\s*=\s*'?(OFF|0)\b|\bUNINSTALL\s+(PLUGIN\s+(audit_log|validate_password)|COMPONENT\s+'file://component_(validate_password|audit_log))|\bALTER\s+SERVER\s+AUDIT\b[^;]*\bSTATE\s*=\s*OFF\b|\bhost_based_authentication\.configuration\s*=\s*'[^']*\btrust\b|\bALTER\s+ACCOUNT\s+UNSET\s+NETWORK_POLICY\b|\bDISABLE_MFA\s*=\s*TRUE\b|\bMINS_TO_BYPASS_MFA\s*=\s*[1-9]|\bALTER\s+USER\s+\S+\s+UNSET\s+NETWORK_POLICY\b`), "the database's audit log, TLS, password rules, network policy or second factor switched off"},
	{regexp.MustCompile(`(?i)\bALTER\s+TABLE\s+\S+\s+ENGINE\s*=\s*BLACKHOLE\b|\bCREATE\s+OR\s+REPLACE\s+TABLE\s+(\S+)\s+AS\s+SELECT\b[^;]*\b(LIMIT\s+0|WHERE\s+(1\s*=\s*0|FALSE|0\s*=\s*1))\b`), "a table's rows discarded (ENGINE=BLACKHOLE, CREATE OR REPLACE ... LIMIT 0)"},
	{regexp.MustCompile(`(?i)\bINSERT\s+INTO\s+FUNCTION\s+(url|s3|gcs|azureBlobStorage|remote|remoteSecure)\s*\(\s*'(https?://|s3://)`), "a table's rows sent to a URL or bucket the statement names (INSERT INTO FUNCTION url(...))"},
	{regexp.MustCompile(`(?i)(^|\n|;)\s*\.restore\s+\S`), "a database overwritten with a backup (sqlite3 .restore)"},
	{regexp.MustCompile(`(?i)\bCOPY\s+INTO\s+'(s3|gcs|azure)://[^']*'[^;]*\bCREDENTIALS\s*=`), "a table unloaded to a bucket with credentials given inline (COPY INTO 's3://...' CREDENTIALS=)"},
}

// sqlStatement is one statement: its upper-cased words (keywords and
// identifiers; string literals and comments dropped) and its span.
type sqlStatement struct {
	words []string
	sp    span
}

// sqlStatements splits SQL on semicolons outside quotes and comments.
func sqlStatements(src string) []sqlStatement {
	var out []sqlStatement
	cur := sqlStatement{sp: span{-1, 0}}
	flush := func(end int) {
		if len(cur.words) > 0 {
			cur.sp.end = end
			out = append(out, cur)
		}
		cur = sqlStatement{sp: span{-1, 0}}
	}
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == ';':
			flush(i)
			i++
		case ch == '\'' || ch == '"' || ch == '`':
			j := i + 1
			for j < len(src) {
				if src[j] == '\\' && ch == '\'' {
					j += 2
					continue
				}
				if src[j] == ch {
					if j+1 < len(src) && src[j+1] == ch {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if ch != '\'' && cur.sp.start >= 0 { // a quoted identifier
				cur.words = append(cur.words, "IDENT")
			}
			if ch == '\'' && len(cur.words) > 0 && sqlRunsString[cur.words[len(cur.words)-1]] && j <= len(src) {
				// EXEC sp_MSforeachtable 'DELETE FROM ?', EXECUTE IMMEDIATE
				// 'DROP TABLE t': the string is a statement the server runs
				for _, st := range sqlStatements(strings.ReplaceAll(src[i+1:min(j, len(src))], "''", "'")) {
					cur.words = append(cur.words, st.words...)
				}
			}
			i = min(j+1, len(src))
		case ch == '-' && strings.HasPrefix(src[i:], "--") || ch == '#':
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			i += j
		case ch == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 4
			}
		case ch == '$':
			i = skipDollarQuote(src, i)
		case ch == '@' && len(cur.words) == 1 && (cur.words[0] == "REMOVE" || cur.words[0] == "RM"):
			cur.words = append(cur.words, "@") // Snowflake's REMOVE @stage
			i++
		case ch == '>' && cur.sp.start >= 0:
			cur.words = append(cur.words, ">") // WHERE id > 0 reads ID > 0
			i++
		case isIdentByte(ch):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			if cur.sp.start < 0 {
				cur.sp.start = i
			}
			cur.words = append(cur.words, strings.ToUpper(src[i:j]))
			i = j
		default:
			i++
		}
	}
	flush(len(src))
	return out
}

// sqlRunsString are the words after which a string literal is a statement
// the server runs: dynamic SQL and SQL Server's per-table and per-database
// loops.
var sqlRunsString = map[string]bool{"EXEC": true, "EXECUTE": true, "IMMEDIATE": true, "SP_EXECUTESQL": true,
	"SP_MSFOREACHTABLE": true, "SP_MSFOREACHDB": true}

// systemCatalog reports a table of the database's own catalog: a row
// deleted from it is a table, a user or a grant gone.
func systemCatalog(table string) bool {
	t := strings.TrimPrefix(table, "MAIN.")
	return t == "SQLITE_MASTER" || t == "SQLITE_SCHEMA" || strings.HasPrefix(t, "PG_CATALOG.") || strings.HasPrefix(t, "MYSQL.") ||
		strings.HasPrefix(t, "SYS.") || strings.HasPrefix(t, "INFORMATION_SCHEMA.")
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// droppable are the objects whose DROP destroys data or what depends on
// it (DROP DEFAULT, DROP NOT NULL and the like change a definition only).
var droppable = map[string]bool{
	"TABLE": true, "DATABASE": true, "SCHEMA": true, "VIEW": true, "MATERIALIZED": true, "INDEX": true,
	"USER": true, "ROLE": true, "TYPE": true, "SEQUENCE": true, "EXTENSION": true, "OWNED": true,
	"COLUMN": true, "CONSTRAINT": true, "PARTITION": true, "KEYSPACE": true, "COLUMNFAMILY": true,
	"SERIES": true, "MEASUREMENT": true, "RETENTION": true, "SHARD": true, "TABLESPACE": true,
	"FUNCTION": true, "PROCEDURE": true, "TRIGGER": true, "DOMAIN": true, "COLLECTION": true,
	"DICTIONARY": true, "STAGE": true, "WAREHOUSE": true, "STREAM": true, "DATASET": true, "LOGIN": true,
	"SCHEDULE": true, "SCHEDULES": true, "BACKUP": true, "SNAPSHOT": true, "SUBSCRIPTION": true, "PUBLICATION": true,
}

// destructiveStatement reports DROP of a table, database, schema, column
// and the other droppable objects, TRUNCATE, DELETE FROM (and ClickHouse's
// ALTER TABLE ... DELETE) or UPDATE without a WHERE that selects rows, and
// RESTORE ... WITH REPLACE.
func destructiveStatement(words []string) (string, bool) {
	if len(words) > 1 && words[0] == "EXPLAIN" && !slices.ContainsFunc(words[1:min(4, len(words))], func(w string) bool { return w == "ANALYZE" || w == "ANALYSE" }) {
		return "", false // a plan, not a run (EXPLAIN ANALYZE runs the statement)
	}
	for i, w := range words {
		switch w {
		case "DROP":
			for _, next := range words[i+1 : min(i+3, len(words))] {
				if droppable[next] {
					return "DROP " + next, true
				}
			}
			if words[0] == "ALTER" && i+1 < len(words) && !slices.Contains([]string{"DEFAULT", "NOT", "IDENTITY", "EXPRESSION", "STORED"}, words[i+1]) {
				return "ALTER ... DROP " + words[i+1], true // a column, without the COLUMN keyword
			}
		case "REMOVE", "RM":
			if i == 0 && len(words) > 1 && words[1] == "@" {
				return "REMOVE of a stage's files", true // Snowflake: REMOVE @stage/path
			}
		case "TRUNCATE":
			if i == 0 || words[i-1] != "ON" { // not a trigger event
				return "TRUNCATE", true
			}
		case "DELETE":
			if i+2 < len(words) && words[i+1] == "FROM" && systemCatalog(words[i+2]) {
				return "DELETE from the system catalog " + strings.ToLower(words[i+2]), true
			}
			// DELETE FROM t, T-SQL's DELETE t, ClickHouse's ALTER TABLE t DELETE
			if i+1 < len(words) && (words[i+1] == "FROM" || i == 0) || i >= 2 && words[0] == "ALTER" {
				if !selectsRows(words[i+1:]) {
					return "DELETE without a WHERE that selects rows", true
				}
			}
			if i >= 1 && words[0] == "MATCH" && !slices.Contains(words, "WHERE") && !slices.Contains(words, "LIMIT") && i <= 4 {
				return "Cypher DELETE of every node a label matches", true // MATCH (n:User) DETACH DELETE n
			}
		case "UPDATE":
			if (i == 0 || i >= 2 && words[0] == "ALTER" && words[i-1] != "ON") && !selectsRows(words[i+1:]) {
				return "UPDATE without WHERE", true
			}
			if i == 0 && len(words) > 1 && systemCatalog(words[1]) {
				return "UPDATE of the system catalog " + strings.ToLower(words[1]), true // UPDATE mysql.user SET authentication_string = ''
			}
		case "PASSWORD", "IDENTIFIED":
			// ALTER USER root IDENTIFIED BY ..., ALTER LOGIN sa WITH PASSWORD,
			// ALTER ROLE postgres PASSWORD, SET PASSWORD: whoever used the
			// old one is locked out
			if len(words) > 2 && words[0] == "ALTER" && (words[1] == "USER" || words[1] == "ROLE" || words[1] == "LOGIN") ||
				i == 1 && words[0] == "SET" {
				return words[0] + " " + words[1] + " ... " + w + " (a login's password changed or removed)", true
			}
		case "SECURITY":
			if i >= 3 && words[i-1] == "LEVEL" && words[i-2] == "ROW" && words[i-3] == "DISABLE" {
				return "DISABLE ROW LEVEL SECURITY (every row readable by whoever can read the table)", true
			}
		case "REVOKE":
			if i == 0 && len(words) > 1 && words[1] == "ALL" && !slices.Contains(words, "PUBLIC") {
				return "REVOKE ALL (a login loses its access)", true
			}
		case "REPLACE":
			if i >= 1 && words[i-1] == "WITH" && words[0] == "RESTORE" {
				return "RESTORE ... WITH REPLACE", true
			}
		case "DETACH":
			if slices.Contains(words[i:], "PERMANENTLY") {
				return "DETACH ... PERMANENTLY", true // ClickHouse: gone until attached by hand
			}
		case "LO_UNLINK", "PG_DROP_REPLICATION_SLOT":
			if slices.Contains(words[i:], "FROM") {
				return strings.ToLower(w) + " of every row a query lists", true // every large object, every slot
			}
		case "DROP_CHUNKS":
			if slices.Contains(words[i:], "NOW") || slices.Contains(words[i:], "CURRENT_TIMESTAMP") {
				return "drop_chunks older than now", true // TimescaleDB: every chunk
			}
		case "SUPERUSER":
			if (words[0] == "ALTER" || words[0] == "CREATE") && len(words) > 1 && (words[1] == "USER" || words[1] == "ROLE") {
				return words[0] + " " + words[1] + " ... SUPERUSER", true // every check of the server off for that login
			}
		case "GRANT":
			if i == 0 && grantsEverything(words) {
				return "GRANT of every privilege on every database, or of a superuser role", true
			}
		case "PG_TERMINATE_BACKEND":
			if slices.Contains(words, "PG_STAT_ACTIVITY") && !slices.ContainsFunc(words, func(w string) bool {
				return w == "DATNAME" || w == "USENAME" || w == "APPLICATION_NAME" || w == "CLIENT_ADDR" || w == "STATE" || w == "QUERY_START" || w == "BACKEND_START"
			}) {
				return "pg_terminate_backend of every session", true
			}
		case "ADD":
			// ALTER SERVER ROLE sysadmin ADD MEMBER x: SQL Server's superuser
			if len(words) > 3 && words[0] == "ALTER" && words[1] == "SERVER" && words[2] == "ROLE" && words[3] == "SYSADMIN" {
				return "ALTER SERVER ROLE sysadmin ADD MEMBER", true
			}
		case "REPAIR_ALLOW_DATA_LOSS":
			return "DBCC ... REPAIR_ALLOW_DATA_LOSS", true // SQL Server repairs by deallocating what it cannot read
		case "IMMEDIATE":
			// ALTER DATABASE x SET SINGLE_USER|OFFLINE WITH ROLLBACK IMMEDIATE:
			// every other session is ended and its transaction rolled back
			if i >= 1 && words[i-1] == "ROLLBACK" && len(words) > 1 && words[0] == "ALTER" && words[1] == "DATABASE" &&
				(slices.Contains(words, "SINGLE_USER") || slices.Contains(words, "OFFLINE")) {
				return "ALTER DATABASE ... WITH ROLLBACK IMMEDIATE", true
			}
		case "RESET", "PURGE":
			// RESET MASTER, RESET BINARY LOGS AND GTIDS, PURGE BINARY LOGS:
			// the binary logs replicas and point-in-time recovery read.
			if i == 0 && len(words) > 1 && (words[1] == "MASTER" || words[1] == "BINARY" && len(words) > 2 && words[2] == "LOGS") {
				return w + " " + words[1], true
			}
		}
	}
	return "", false
}

// tempTable returns the table a CREATE TEMP[ORARY] TABLE statement makes.
func tempTable(words []string) string {
	if len(words) < 4 || words[0] != "CREATE" {
		return ""
	}
	i := 1
	if words[i] == "LOCAL" || words[i] == "GLOBAL" {
		i++
	}
	if i+2 >= len(words) || words[i] != "TEMP" && words[i] != "TEMPORARY" || words[i+1] != "TABLE" {
		return ""
	}
	return words[i+2]
}

// createdObject returns the kind and name of the table, database or
// schema a CREATE statement makes: not CREATE OR REPLACE, which may
// replace one that was there, nor IF NOT EXISTS, which does nothing when
// it is there.
func createdObject(words []string) (string, string) {
	if len(words) < 3 || words[0] != "CREATE" || !scratchKinds[words[1]] || words[2] == "IF" {
		return "", ""
	}
	return words[1], words[2]
}

// scratchSQL reports a script in which a name the script created can
// only be what it created: no statement renames, exchanges, attaches or
// moves objects into it, and no MySQL executable comment (/*! ... */,
// run by the server, skipped by sqlStatements) hides more SQL.
func scratchSQL(src string, sts []sqlStatement) bool {
	if strings.Contains(src, "/*!") || strings.Contains(src, "/*+") {
		return false
	}
	for _, st := range sts {
		for _, w := range st.words {
			switch w {
			case "RENAME", "EXCHANGE", "ATTACH", "MOVE", "ALTER", "SWAP", "TRANSFER":
				return false
			}
		}
	}
	return true
}

// scratchKinds are the objects a script may make and drop again.
var scratchKinds = map[string]bool{"TABLE": true, "DATABASE": true, "SCHEMA": true}

// droppedTable returns the kind and name of the one table (database,
// schema) a DROP statement drops.
func droppedTable(words []string) (string, string) {
	if len(words) < 3 || words[0] != "DROP" || !scratchKinds[words[1]] {
		return "", ""
	}
	rest := words[2:]
	if len(rest) > 2 && rest[0] == "IF" && rest[1] == "EXISTS" {
		rest = rest[2:]
	}
	if len(rest) == 2 && (rest[1] == "PURGE" || rest[1] == "RESTRICT") {
		rest = rest[:1] // not CASCADE: that drops what depends on it too
	}
	if len(rest) != 1 {
		return "", ""
	}
	return words[1], rest[0]
}

// secretColumns are the column names applications keep credentials in.
var secretColumns = map[string]bool{
	"PASSWORD": true, "PASSWD": true, "PASSWORD_HASH": true, "PASSWORD_DIGEST": true, "ENCRYPTED_PASSWORD": true, "HASHED_PASSWORD": true,
	"API_TOKEN": true, "API_KEY": true, "APIKEY": true, "SECRET": true, "SECRET_KEY": true, "CLIENT_SECRET": true, "ACCESS_TOKEN": true,
	"REFRESH_TOKEN": true, "AUTH_TOKEN": true, "SESSION_TOKEN": true, "PRIVATE_KEY": true, "OTP_SECRET": true, "TOTP_SECRET": true,
	"MFA_SECRET": true, "RESET_PASSWORD_TOKEN": true, "REMEMBER_TOKEN": true, "SALTED_HASH": true,
	"ROLPASSWORD": true, "AUTHENTICATION_STRING": true, "CREDENTIALS": true,
}

// secretTables are the catalogs that hold the server's own password
// hashes: SELECT * from one prints them.
var secretTables = map[string]bool{"PG_SHADOW": true, "PG_AUTHID": true, "PG_CATALOG.PG_SHADOW": true, "PG_CATALOG.PG_AUTHID": true,
	"MYSQL.USER": true, "SYS.SQL_LOGINS": true, "MASTER.SYS.SQL_LOGINS": true, "SYS.USER": true, "SYSTEM.USERS": true}

// selectsSecret reports a SELECT whose result columns include a column
// that holds credentials (SELECT email, password_hash FROM users): the
// rows print them. A secret column in an aggregate or only in the WHERE
// clause (count(*) ... WHERE password_hash IS NULL) is not read out.
func selectsSecret(words []string) (string, bool) {
	if len(words) == 0 || words[0] != "SELECT" {
		return "", false
	}
	for i, w := range words[1:] {
		if w == "FROM" {
			if i == 0 && len(words) > 2 && secretTables[words[2]] {
				return strings.ToLower(words[2]), true // SELECT * FROM pg_shadow
			}
			break
		}
		if dot := strings.LastIndexByte(w, '.'); dot >= 0 {
			w = w[dot+1:] // users.password_hash, shop.users.password_hash
		}
		if secretColumns[w] && (i == 0 || !slices.Contains([]string{"COUNT", "LENGTH", "OCTET_LENGTH", "CHAR_LENGTH", "MD5", "BOOL", "COALESCE"}, words[i])) {
			return strings.ToLower(w), true
		}
	}
	return "", false
}

// idColumn reports a column named as a row's key (id, user_id, InvoiceId).
func idColumn(col string) bool {
	if dot := strings.LastIndexByte(col, '.'); dot >= 0 {
		col = col[dot+1:]
	}
	return col == "ID" || strings.HasSuffix(col, "_ID") || strings.HasSuffix(col, "ID") && len(col) > 4
}

// grantsEverything reports GRANT ALL [PRIVILEGES] ON *.* (MySQL) or the
// grant of a role that is the server's superuser (rds_superuser,
// cloudsqlsuperuser, azure_pg_admin, pg_execute_server_program), or SUPER.
func grantsEverything(words []string) bool {
	if len(words) > 2 && words[2] == "TO" {
		switch words[1] {
		case "ADMIN", "POSTGRES", "ROOT", "DB_OWNER":
			// GRANT admin TO contractor: membership of the cluster's
			// administrators' role (CockroachDB's admin, PostgreSQL's
			// bootstrap superuser)
			return true
		}
	}
	for i, w := range words {
		switch w {
		case "RDS_SUPERUSER", "CLOUDSQLSUPERUSER", "AZURE_PG_ADMIN", "PG_EXECUTE_SERVER_PROGRAM", "PG_READ_SERVER_FILES", "PG_WRITE_SERVER_FILES", "SUPER", "SYSADMIN",
			"ACCOUNTADMIN", "SECURITYADMIN", "ORGADMIN", "DBA", "SUPERUSER":
			return true
		case "PUBLIC", "GUEST":
			// GRANT ALL ... TO PUBLIC: every login, present and future
			if i > 0 && words[i-1] == "TO" && slices.Contains(words[:i], "ALL") {
				return true
			}
		case "KEYSPACES", "DATABASES":
			if i > 1 && words[i-1] == "ALL" && words[i-2] == "ON" && slices.Contains(words[:i-1], "ALL") {
				return true // Cassandra: GRANT ALL PERMISSIONS ON ALL KEYSPACES
			}
		case "ON":
			// * is not kept in a token: ON *.* TO reads ON . TO
			if i+1 < len(words) && (words[i+1] == "." || words[i+1] == "TO") && slices.Contains(words[:i], "ALL") {
				return true
			}
		}
	}
	return false
}

// selectsRows reports a WHERE clause among words that is not always true
// (WHERE 1, WHERE 1=1, WHERE TRUE select every row).
func selectsRows(words []string) bool {
	for k, w := range words {
		if w != "WHERE" {
			continue
		}
		cond := words[k+1:]
		if n := slices.Index(cond, "LIMIT"); n >= 0 {
			cond = cond[:n]
		}
		switch strings.Join(cond, " ") {
		case "1", "1 1", "TRUE", "0 0":
			return false
		}
		if len(cond) == 2 && cond[0] == cond[1] {
			return false // WHERE customer_id = customer_id: every row
		}
		if len(cond) == 4 && cond[1] == "IS" && cond[2] == "NOT" && cond[3] == "NULL" {
			return false // WHERE id IS NOT NULL: every row that has one
		}
		if len(cond) == 3 && cond[1] == ">" && cond[2] == "0" && idColumn(cond[0]) {
			return false // WHERE id > 0: every row
		}
		return true
	}
	return false
}

// skipDollarQuote skips a PostgreSQL $$...$$ or $tag$...$tag$ string at i,
// or just the $ when there is none.
func skipDollarQuote(src string, i int) int {
	j := i + 1
	for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z') {
		j++
	}
	if j >= len(src) || src[j] != '$' {
		return i + 1
	}
	tag := src[i : j+1]
	k := strings.Index(src[j+1:], tag)
	if k < 0 {
		return len(src)
	}
	return j + 1 + k + len(tag)
}

// templateSQL returns what a SQL statement built at run time destroys when
// its literal words already say so: psql -c "DROP TABLE $t", xargs -I{}
// psql -c 'DROP TABLE "{}"' (the names come from a list, the verb does not).
func templateSQL(text string) string {
	for _, st := range sqlStatements(text) {
		if detail, ok := destructiveStatement(st.words); ok {
			return detail
		}
	}
	return ""
}

// sqlFiles judges the SQL files a client runs (psql -f FILE, sqlcmd -i
// FILE, --file=FILE) that the command wrote earlier with known content:
// printf 'DROP TABLE users;' > x.sql && psql -f x.sql.
func (w *walker) sqlFiles(c *command) {
	for i, a := range c.args {
		if !a.lit {
			continue
		}
		var f arg
		switch name, val, inline := strings.Cut(a.val, "="); {
		case inline && (name == "--file" || name == "--filename"):
			f = arg{val: val, lit: true, pos: a.pos, end: a.end, exact: -1}
		case (a.val == "-f" || a.val == "--file" || a.val == "-i" && c.name == "sqlcmd") && i+1 < len(c.args):
			f = c.args[i+1]
		default:
			continue
		}
		if f.lit && (f.val == "/dev/stdin" || f.val == "-" || f.val == "/dev/fd/0" || f.val == "/proc/self/fd/0") {
			w.stdinCode(c, langSQL, nil) // psql -f /dev/stdin <<EOF: the script is the input
			continue
		}
		if wr, ok := w.writtenScript(f); ok && wr.s.known {
			w.runCode(c, langSQL, argCode(arg{val: wr.s.text, lit: true, pos: a.pos, end: a.end, exact: -1}), c.name+" "+a.val, c.sp, nil, false)
		} else if ok && wr.s.taint&taintSQLGen != 0 {
			// manage.py sqlflush > f.sql && psql -f f.sql
			w.runCode(c, langSQL, wr.s.code(), c.name+" "+a.val, c.sp, nil, false)
		}
	}
}

// rolledBack reports a PostgreSQL script that is one transaction rolled
// back: BEGIN (or START TRANSACTION), statements PostgreSQL undoes with
// the transaction (DELETE, UPDATE, TRUNCATE, DROP TABLE, ALTER, ...), and
// ROLLBACK as its last statement, with no other COMMIT, END or ROLLBACK,
// no psql meta-command (\c, \!) and nothing that acts outside the
// transaction (dblink, COPY ... PROGRAM, terminating backends). What cannot
// run in a transaction block (DROP DATABASE, VACUUM) fails there.
func rolledBack(src string, sts []sqlStatement) bool {
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), `\`) {
			return false
		}
	}
	if len(sts) < 3 {
		return false
	}
	first, last := sts[0].words, sts[len(sts)-1].words
	begins := len(first) >= 1 && first[0] == "BEGIN" || len(first) >= 2 && first[0] == "START" && first[1] == "TRANSACTION"
	if !begins {
		return false
	}
	if len(last) == 0 || last[0] != "ROLLBACK" || len(last) > 2 {
		return false
	}
	for _, st := range sts[1 : len(sts)-1] {
		if len(st.words) == 0 {
			continue
		}
		switch st.words[0] {
		case "DELETE", "UPDATE", "INSERT", "SELECT", "TRUNCATE", "DROP", "ALTER", "CREATE", "SAVEPOINT", "RELEASE", "WITH", "EXPLAIN", "TABLE", "VALUES":
		default:
			return false
		}
		for _, w := range st.words {
			switch w {
			case "COMMIT", "PROGRAM", "DBLINK", "DBLINK_EXEC", "PG_TERMINATE_BACKEND", "PG_CANCEL_BACKEND", "PG_RELOAD_CONF",
				"LO_EXPORT", "PG_FILE_WRITE", "PG_DROP_REPLICATION_SLOT", "PG_CREATE_RESTORE_POINT", "DATABASE", "SUBSCRIPTION", "CONCURRENTLY":
				return false
			}
		}
	}
	return true
}

// tmpFile reports a database file directly in the temporary directory
// (/tmp/scratch.db): a scratch database, not one a service keeps.
func tmpFile(p string) bool {
	rest, ok := strings.CutPrefix(p, "/tmp/")
	return ok && rest != "" && !strings.ContainsAny(rest, "/*?[") && rest != ".." && rest != "."
}
