package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Configuration files and environment for a command's flags (dplp serve;
// docs/SERVING.md, "Configuration file and environment").
//
// File format (UTF-8, one setting a line):
//
//	# a comment: a line whose first non-blank character is '#'
//	graph      = /srv/dplp/graph.txt     # a comment after a value follows a blank
//	user-budget = 10
//	grace      = 45s
//	access-log = true
//	phases     = sticky,fresh            # lists: comma-separated, as on the command line
//	store      = "sqlite:/var/lib/dplp/ledger #2.db"   # quoted (Go syntax): '#', blanks kept
//
// Keys are the command's long flag names without the dashes; values are
// what the flag accepts on the command line. Blank lines are ignored.
// Unknown keys, a key given twice, a line without '=', and values the flag
// refuses are errors naming the file and line.
//
// Environment: DPLP_<FLAG> sets a flag, FLAG being its name in upper case
// with '-' (and any other character that is not a letter or digit) turned
// into '_': --user-budget is DPLP_USER_BUDGET. An empty variable counts as
// unset. Variables starting with DPLP_ that name no flag are ignored
// (the prefix is shared with test and benchmark settings).
//
// Precedence: command-line flags > environment > file > defaults. Values
// from the file and the environment are checked even when the command line
// overrides them, so a broken file is noticed at once.

// configFlag names the flag that names the configuration file; configEnv
// names it when the flag is not given.
const (
	configFlag = "config"
	configEnv  = "DPLP_CONFIG"
	envPrefix  = "DPLP_"
)

// withConfigFile registers --config FILE on cmd and makes cmd, before it
// runs (PreRunE, then any PreRunE it already had), set every flag not given
// on its command line from DPLP_* environment variables and from the file
// named by --config or, without it, by $DPLP_CONFIG (see applyConfig).
// environ supplies the environment (os.Environ outside tests).
func withConfigFile(cmd *cobra.Command, environ func() []string) {
	cmd.Flags().String(configFlag, "", "read settings from `FILE`: key = value lines, keys being flag names (default $"+configEnv+"); every flag can also be set by a DPLP_<FLAG_NAME> environment variable; command-line flags win over the environment, which wins over the file")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		env := environ()
		path, _ := c.Flags().GetString(configFlag)
		if !c.Flags().Changed(configFlag) {
			path, _ = lookupEnv(env, configEnv)
		}
		if err := applyConfig(c, path, env); err != nil {
			return err
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// envName is the environment variable that sets the flag named name.
func envName(name string) string {
	var b strings.Builder
	b.WriteString(envPrefix)
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// lookupEnv finds key in env ("KEY=VALUE" entries; the last one wins, as in
// os/exec). Empty values count as unset.
func lookupEnv(env []string, key string) (string, bool) {
	val, ok := "", false
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found && k == key {
			val, ok = v, v != ""
		}
	}
	return val, ok
}

// setting is one value for a flag and where it came from.
type setting struct {
	value string
	where string // "FILE:LINE" or "environment variable DPLP_X"
	line  int    // 0 for the environment
}

// applyConfig sets every flag of cmd that was not given on the command line
// from env (DPLP_<FLAG> entries, "KEY=VALUE") or, failing that, from the
// configuration file at path ("" for none), with the format and precedence
// described above. It works for any flags (string, bool, ints, floats,
// durations, slices and custom pflag.Values) except help and config
// themselves. Flags it sets are marked as changed, as if given on the
// command line. On error no flag has been set.
func applyConfig(cmd *cobra.Command, path string, env []string) error {
	fs := cmd.Flags()
	flags := map[string]*pflag.Flag{} // settable flags by name
	byEnv := map[string]*pflag.Flag{} // and by environment variable
	fs.VisitAll(func(f *pflag.Flag) { // includes inherited persistent flags after parsing
		if f.Name == "help" || f.Name == configFlag {
			return
		}
		flags[f.Name] = f
		byEnv[envName(f.Name)] = f
	})
	if len(byEnv) != len(flags) {
		return errors.New("config: two flags map to the same DPLP_ environment variable") // a programming error
	}
	set := map[string]setting{}
	if path != "" {
		if err := readConfigFile(path, flags, set); err != nil {
			return err
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if f, ok := byEnv[k]; ok {
			if v, ok := lookupEnv(env, k); ok {
				set[f.Name] = setting{value: v, where: "environment variable " + k}
			}
		}
	}
	// Check every value first (even those the command line overrides), then
	// set: an error leaves the flags as parsed.
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { // file order, then the environment
		if la, lb := set[a].line, set[b].line; la != lb && la != 0 && lb != 0 {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		f, s := flags[name], set[name]
		if err := checkValue(f, s.value); err != nil {
			return fmt.Errorf("%s: %s: %v", s.where, name, valueError(f, err))
		}
	}
	for _, name := range names {
		f, s := flags[name], set[name]
		if f.Changed { // given on the command line
			continue
		}
		if err := fs.Set(name, s.value); err != nil {
			return fmt.Errorf("%s: %s: %v", s.where, name, valueError(f, errors.Unwrap(err)))
		}
	}
	return nil
}

// readConfigFile parses the file at path into set, checking keys against
// flags.
func readConfigFile(path string, flags map[string]*pflag.Flag, set map[string]setting) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", configFlag, err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a byte-order mark
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, n)
		key, raw, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s: expected `key = value` (a flag name, '=', its value) or a # comment", where)
		}
		key = strings.TrimSpace(key)
		if key == "" {
			return fmt.Errorf("%s: missing key before '='", where)
		}
		if key == configFlag {
			return fmt.Errorf("%s: %s cannot be set inside a configuration file", where, configFlag)
		}
		if _, ok := flags[key]; !ok {
			return fmt.Errorf("%s: unknown key %q%s", where, key, suggestFlag(key, flags))
		}
		if prev, dup := set[key]; dup {
			return fmt.Errorf("%s: %s is already set on line %d", where, key, prev.line)
		}
		val, err := configValue(raw)
		if err != nil {
			return fmt.Errorf("%s: %s: %v", where, key, err)
		}
		set[key] = setting{value: val, where: where, line: n}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}

// configValue parses the text after '=': a Go double-quoted string, or the
// text up to a '#' that follows a blank, trimmed; either may be followed by
// a comment.
func configValue(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, `"`) {
		q, err := strconv.QuotedPrefix(raw)
		if err != nil {
			return "", errors.New("unterminated or malformed quoted value (Go syntax: \"...\" with \\\" and \\\\ escapes)")
		}
		rest := strings.TrimSpace(raw[len(q):])
		if rest != "" && rest[0] != '#' {
			return "", errors.New("text after the closing quote (only a # comment may follow)")
		}
		return strconv.Unquote(q)
	}
	for i := 1; i < len(raw); i++ {
		if raw[i] == '#' && (raw[i-1] == ' ' || raw[i-1] == '\t') {
			return strings.TrimSpace(raw[:i]), nil
		}
	}
	if strings.HasPrefix(raw, "#") { // `key = # comment`: an empty value
		return "", nil
	}
	return raw, nil
}

// checkValue reports whether f would accept v, without changing f: the
// value is set on a scratch flag of the same type. Custom types are checked
// when they are set.
func checkValue(f *pflag.Flag, v string) error {
	s := pflag.NewFlagSet("check", pflag.ContinueOnError)
	switch f.Value.Type() {
	case "string":
		return nil
	case "bool":
		s.Bool("x", false, "")
	case "int":
		s.Int("x", 0, "")
	case "int8":
		s.Int8("x", 0, "")
	case "int16":
		s.Int16("x", 0, "")
	case "int32":
		s.Int32("x", 0, "")
	case "int64":
		s.Int64("x", 0, "")
	case "uint":
		s.Uint("x", 0, "")
	case "uint8":
		s.Uint8("x", 0, "")
	case "uint16":
		s.Uint16("x", 0, "")
	case "uint32":
		s.Uint32("x", 0, "")
	case "uint64":
		s.Uint64("x", 0, "")
	case "float32":
		s.Float32("x", 0, "")
	case "float64":
		s.Float64("x", 0, "")
	case "duration":
		s.Duration("x", 0, "")
	case "count":
		s.Count("x", "")
	case "stringSlice":
		s.StringSlice("x", nil, "")
	case "stringArray":
		s.StringArray("x", nil, "")
	case "intSlice":
		s.IntSlice("x", nil, "")
	case "int32Slice":
		s.Int32Slice("x", nil, "")
	case "int64Slice":
		s.Int64Slice("x", nil, "")
	case "uintSlice":
		s.UintSlice("x", nil, "")
	case "float32Slice":
		s.Float32Slice("x", nil, "")
	case "float64Slice":
		s.Float64Slice("x", nil, "")
	case "boolSlice":
		s.BoolSlice("x", nil, "")
	case "durationSlice":
		s.DurationSlice("x", nil, "")
	default:
		return nil
	}
	return s.Lookup("x").Value.Set(v)
}

// valueError explains a value f refused. String flags never refuse a value,
// so the values quoted by the parse errors are numbers, durations or
// booleans, never a secret such as a DSN.
func valueError(f *pflag.Flag, err error) error {
	want := map[string]string{
		"bool":     "true or false",
		"int":      "an integer",
		"int64":    "an integer",
		"uint":     "a non-negative integer",
		"float64":  "a number (inf for infinity)",
		"duration": "a duration such as 500ms, 30s or 5m",
	}[f.Value.Type()]
	if want == "" {
		want = "a valid " + f.Value.Type()
	}
	return fmt.Errorf("want %s: %v", want, err)
}

// suggestFlag returns ` (did you mean "x"?)` for the flag closest to key,
// or "".
func suggestFlag(key string, flags map[string]*pflag.Flag) string {
	norm := strings.ToLower(strings.ReplaceAll(strings.TrimLeft(key, "-"), "_", "-"))
	best, bestD := "", 3 // suggest within edit distance 2
	for name := range flags {
		d := editDistance(norm, name)
		if d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
