package policy

import (
	"regexp"
	"slices"
	"strings"
)

// sdkLibraries match interpreter code that loads a client library of a
// cloud, a cluster, a forge or a data store (boto3, google-cloud-*, the
// Azure SDK, the Kubernetes clients, database drivers and ORMs): code whose
// method calls reach resources beyond the host with the job's credentials.
var sdkLibraries = map[lang]*regexp.Regexp{
	langPython: regexp.MustCompile(`(?:^|[;\s])(?:import|from)\s+(?:[\w.]+\s*,\s*)*(?:boto3|botocore|aioboto3|google\.cloud|googleapiclient|azure\.|kubernetes|redis|pymongo|motor|psycopg2?|pymysql|MySQLdb|mysql\.connector|sqlalchemy|sqlite3|github|gitlab|elasticsearch|opensearchpy|hvac|openstack|digitalocean|hcloud|linode_api4|cassandra|neo4j|influxdb_client|firebase_admin|clickhouse_connect|snowflake|pika|kafka|confluent_kafka|docker|pulumi` +
		`|pinecone|chromadb|qdrant_client|weaviate|pymilvus|lancedb|meilisearch|typesense|ovh|databricks|upstash_redis|supabase|stripe|couchdb|arango|minio|b2sdk|scaleway|oci|ibm_cloud_sdk_core|ibm_platform_services` +
		`|rethinkdb|huggingface_hub|mlflow|wandb|pyspark|datadog|datadog_api_client|uptime_kuma_api|pyzabbix|zabbix_utils|pagerduty|pdpyras|newrelic_api|grafana_client|grafana_api|opsgenie_sdk|jira|atlassian|slack_sdk|hubspot|salesforce|simple_salesforce|sentry_sdk|launchdarkly_api|unleash)\b` +
		`|\.objects\.(?:all|filter|exclude)\(`), // a Django model manager (manage.py shell -c)
	langNode: regexp.MustCompile(`(?:require\s*\(\s*|from\s+|import\s*\(\s*)['"](?:@aws-sdk/|@google-cloud/|@azure/|@octokit/|@elastic/|@opensearch-project/|@planetscale/|@neondatabase/|@supabase/|@clickhouse/|@kubernetes/client-node|@prisma/client|(?:aws-sdk|mongodb|mongoose|ioredis|redis|octokit|pg|mysql2?|firebase-admin|kafkajs|dockerode|better-sqlite3|knex|chromadb|weaviate-client|meilisearch|typesense|stripe|minio|cloudflare|@pinecone-database/|@qdrant/|@upstash/|@vercel/|@neo4j|neo4j-driver|@planetscale/)['"/])`),
	langRuby: regexp.MustCompile(`\b(?:Aws|Google::Cloud|Azure|Octokit|Mongo|Redis|PG|Mysql2|Sequel|Kubeclient|Fog)(?:::|\.new|\.connect)|require\s*\(?\s*['"](?:aws-sdk|google/cloud|azure|octokit|mongo|redis|pg|mysql2|kubeclient|fog)`),
	langPHP:  regexp.MustCompile(`\bAws\\|\bGoogle\\Cloud\\|\bMongoDB\\|\bnew\s+(?:\\?PDO|\\?Redis|\\?mysqli)\b|\bPredis\\`),
	langPerl: regexp.MustCompile(`\b(?:Paws|Net::Amazon|DBI->connect|Redis->new|MongoDB::|Net::Google)`),
}

// sdkDestroyWords are the verbs of methods that delete, wipe or stop what a
// client library manages: delete_bucket, deleteNamespace, DeleteTableCommand,
// drop_database, flushall, purge_queue, terminate_instances, truncate.
var sdkDestroyWords = map[string]bool{
	"delete": true, "destroy": true, "terminate": true, "purge": true, "drop": true, "flush": true, "flushall": true,
	"flushdb": true, "truncate": true, "wipe": true, "erase": true, "deregister": true, "empty": true, "nuke": true,
	"obliterate": true, "unlink": true, "remove": true, "rm": true,
	"squash":  true, // super_squash_history: a repository's history rewritten into one commit
	"disable": true, // disable_secrets_engine, disable_key, disable_audit_device: a control or a store switched off
}

// sdkLeadWords may come before the verb: begin_delete, batch_delete_image,
// bulk_delete, force_delete, async_delete, schedule_key_deletion.
var sdkLeadWords = map[string]bool{
	"begin": true, "batch": true, "bulk": true, "force": true, "async": true, "start": true, "do": true, "perform": true,
	"permanently": true, "hard": true, "schedule": true, "new": true, "super": true,
}

// sdkReadWords make a method a read or an undo: list_deleted_secrets,
// get_deletion_protection, undelete, restore, recover, cancel_key_deletion;
// delete_message acknowledges a queue message (routine consumption).
var sdkReadWords = map[string]bool{
	"list": true, "get": true, "describe": true, "is": true, "has": true, "can": true, "undelete": true, "restore": true,
	"recover": true, "cancel": true, "message": true, "messages": true, "marker": true, "markers": true, "watch": true,
}

// identWords splits a method name into lower-case words at underscores,
// dashes and case changes: DeleteTableCommand -> delete table command.
func identWords(name string) []string {
	var words []string
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, strings.ToLower(name[start:end]))
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '!':
			flush(i)
			start = i + 1
		case c >= 'A' && c <= 'Z' && i > start && (name[i-1] >= 'a' && name[i-1] <= 'z' || name[i-1] >= '0' && name[i-1] <= '9'):
			flush(i)
			start = i
		}
	}
	flush(len(name))
	return words
}

// sdkDestroyMethod reports whether a method name is in the destroying-verb
// class: its first word after any lead word is a destroy verb (a bare
// remove or unlink only with more words: list.remove(x) is not an API
// call), or it schedules a deletion.
func sdkDestroyMethod(name string) bool {
	words := identWords(name)
	for _, w := range words {
		if sdkReadWords[w] {
			return false
		}
	}
	i := 0
	for i < len(words)-1 && sdkLeadWords[words[i]] {
		i++
	}
	if i >= len(words) {
		return false
	}
	if words[0] == "schedule" && strings.HasPrefix(words[len(words)-1], "deletion") {
		return true
	}
	if len(words) == 2 && (words[1] == "drop" || words[1] == "delete" || words[1] == "destroy" || words[1] == "purge") &&
		!slices.Contains([]string{"on", "pre", "post", "before", "after", "can", "should", "is", "allow", "soft", "mark", "will", "did"}, words[0]) {
		return true // RethinkDB's db_drop, table_drop: the object, then the verb
	}
	switch w := words[i]; w {
	case "remove", "unlink", "rm":
		return len(words) > i+1 && words[len(words)-1] != "listener"
	default:
		return sdkDestroyWords[w]
	}
}

// scratchDatabase is a connection to an in-memory database: sqlite3 or
// duckdb's :memory:, or duckdb.connect() with no file.
var scratchDatabase = regexp.MustCompile(`\bconnect\(\s*(?:["']:memory:["'])?\s*\)`)

// anyConnect is any call that may open a database: connect, Connect,
// Connection, create_engine, open_database.
var anyConnect = regexp.MustCompile(`(?i)(connect|connection|engine|open_database|database)\w*\s*\(`)

// sdkCalls judges code that loads a client library of a cloud, cluster,
// forge or data store: a call of a method in the destroying-verb class
// (s3.delete_bucket(...), bucket.objects.all().delete(),
// new DeleteTableCommand(...), core.deleteNamespace(...), r.flushall()) is
// inline-code, and a destructive SQL statement in one of its string
// literals (cursor.execute('DROP SCHEMA public CASCADE')) is sql-destructive.
func (w *walker) sdkCalls(l lang, f *frame, masked string, lits []codeLit) {
	re := sdkLibraries[l]
	if re == nil || !re.MatchString(f.src) {
		return
	}
	for i := 0; i < len(masked); {
		c := masked[i]
		if !isIdentStart(c) || i > 0 && (isIdentByte(masked[i-1]) && masked[i-1] != '.' || masked[i-1] == '$' || masked[i-1] == '@') {
			i++
			continue
		}
		j := i
		for j < len(masked) && isIdentByte(masked[j]) && masked[j] != '.' {
			j++
		}
		name := masked[i:j]
		k := j
		if k < len(masked) && masked[k] == '!' { // ruby bucket.delete!
			k++
		}
		for k < len(masked) && (masked[k] == ' ' || masked[k] == '\t') {
			k++
		}
		called := k < len(masked) && masked[k] == '(' ||
			l == langRuby && i > 0 && masked[i-1] == '.' && (k == len(masked) || strings.IndexByte(";\n})", masked[k]) >= 0)
		if called && sdkDestroyMethod(name) {
			w.d.add(f, ruleInlineCode, "calls "+name+" of a cloud, cluster or data-store client library", "", span{i, j})
			return
		}
		i = j
	}
	if loc := lifecycleExpireNow.FindStringIndex(f.src); loc != nil {
		w.d.add(f, ruleInlineCode, "sets a lifecycle rule that deletes every object within a day", "", span{loc[0], loc[1]})
		return
	}
	if n := len(scratchDatabase.FindAllStringIndex(f.src, -1)); n > 0 && n == len(anyConnect.FindAllStringIndex(f.src, -1)) &&
		!strings.Contains(strings.ToUpper(f.src), "ATTACH") {
		return // sqlite3.connect(":memory:"): the code's only database is its own scratch
	}
	for _, lit := range lits {
		if !sqlLike(lit.val) {
			continue
		}
		for _, st := range sqlStatements(lit.val) {
			if detail, ok := destructiveStatement(st.words); ok {
				w.d.add(f, ruleSQLDestructive, detail+" sent through a database driver", "", span{lit.start, lit.end})
				return
			}
		}
	}
}

// sqlLike reports whether a string literal starts like a SQL statement.
func sqlLike(s string) bool {
	s = strings.TrimSpace(s)
	word, _, _ := strings.Cut(s, " ")
	switch strings.ToUpper(word) {
	case "DROP", "TRUNCATE", "DELETE", "UPDATE", "ALTER", "WITH", "BEGIN;", "BEGIN", "SET":
		return true
	}
	return false
}

func isIdentStart(c byte) bool { return c == '_' || isLetter(c) }

// lifecycleExpireNow is an object-store lifecycle rule, as an SDK call
// spells it, that expires every object within a day.
var lifecycleExpireNow = regexp.MustCompile(`['"]?Expiration['"]?\s*[:=]\s*\{\s*['"]?Days['"]?\s*[:=]\s*[01]\s*[,}]`)
