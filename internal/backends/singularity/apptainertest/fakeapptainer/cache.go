//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// cacheCleanFlags are apptainer cache clean's flags.
var cacheCleanFlags = []flagDef{
	{name: "type", short: "T", kind: sliceFlag},
	{name: "days", short: "D", kind: intFlag},
	{name: "dry-run", short: "n", kind: boolFlag},
	{name: "force", short: "f", kind: boolFlag},
}

// cacheDirs maps clean's --type values to the cache's subdirectories.
var cacheDirs = map[string]string{
	"library": "library", "oci": "oci-tmp", "shub": "shub", "blob": "blob",
	"net": "net", "oras": "oras",
}

// cmdCache is apptainer cache; only "clean" is implemented.
func cmdCache(args []string) error {
	if len(args) == 0 {
		return &usageError{cmd: "cache", msg: "a subcommand is required"}
	}
	if args[0] != "clean" {
		return fatalf("fakeapptainer: cache %s is not implemented by the test double", args[0])
	}
	fl, rest, err := parseFlags("clean", cacheCleanFlags, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &usageError{cmd: "clean", msg: fmt.Sprintf("unknown command %q for \"apptainer cache clean\"", rest[0])}
	}
	dry := fl.bool("dry-run")
	if dry {
		fmt.Println("User requested a dry run. Not actually deleting any data!")
	}
	if !fl.bool("force") && !dry {
		// apptainer prompts on stdout and reads the answer from stdin; at
		// end of input it fails.
		fmt.Print("This will delete everything in your cache (containers from all sources and OCI blobs). \n" +
			"Hint: You can see exactly what would be deleted by canceling and using the --dry-run option.\n" +
			"Do you want to continue? [N/y] ")
		input, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			return fatalf("Handle clean failed: could not prompt user: could not read user's input: %v", err)
		}
		if strings.ToLower(input) != "y\n" {
			info("Handle cleanup canceled")
			return nil
		}
	}
	root := cacheRoot()
	if root == "" {
		return nil
	}
	types := fl.list("type")
	var targets []string
	for _, t := range types {
		if t == "all" {
			targets = nil
			break
		}
		d, ok := cacheDirs[t]
		if !ok {
			return fatalf("Handle clean failed: could not clean cache: %s is not a valid cache type", t)
		}
		targets = append(targets, filepath.Join(root, d))
	}
	if len(targets) == 0 {
		targets = []string{root}
	}
	for _, t := range targets {
		if dry {
			fmt.Printf("Would remove %s\n", t)
			continue
		}
		if err := os.RemoveAll(t); err != nil {
			return fatalf("Handle clean failed: could not clean cache: %v", err)
		}
	}
	return nil
}
