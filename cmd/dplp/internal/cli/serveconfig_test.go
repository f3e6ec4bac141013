package cli

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// cfgVals are the flag values the throwaway command saw when it ran.
type cfgVals struct {
	Str        string
	N          int
	UserBudget float64
	On         bool
	Wait       time.Duration
	Tags       []string
	Names      []string
	Need       string
}

func defaults() cfgVals {
	return cfgVals{Str: "def", N: 1, UserBudget: 0.5, Wait: time.Second, Tags: []string{"a"}, Names: []string{}, Need: "need"}
}

// runCfgCmd runs a throwaway command with several flag types, a required
// flag and a PreRunE of its own, through withConfigFile.
func runCfgCmd(t *testing.T, args, env []string) (cfgVals, bool, error) {
	t.Helper()
	var v cfgVals
	ran, preRan := false, false
	cmd := &cobra.Command{
		Use: "throwaway",
		PreRunE: func(*cobra.Command, []string) error {
			preRan = true
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			ran = true
			return nil
		},
		SilenceUsage: true, SilenceErrors: true,
	}
	f := cmd.Flags()
	f.StringVar(&v.Str, "str", "def", "")
	f.IntVarP(&v.N, "n", "n", 1, "")
	f.Float64Var(&v.UserBudget, "user-budget", 0.5, "")
	f.BoolVar(&v.On, "on", false, "")
	f.DurationVar(&v.Wait, "wait", time.Second, "")
	f.StringSliceVar(&v.Tags, "tags", []string{"a"}, "")
	f.StringArrayVar(&v.Names, "names", nil, "")
	f.StringVar(&v.Need, "need", "", "")
	if err := cmd.MarkFlagRequired("need"); err != nil {
		t.Fatal(err)
	}
	withConfigFile(cmd, func() []string { return env })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	if ran && !preRan {
		t.Fatal("the command's own PreRunE did not run")
	}
	if v.Names == nil {
		v.Names = []string{}
	}
	return v, ran, err
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dplp.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApplyConfigPrecedence: flags > environment > file > defaults, for
// every flag type.
func TestApplyConfigPrecedence(t *testing.T) {
	const file = `# every type
str = from-file
n = 2            # a comment after a value
user-budget = 3.5
on = true
wait = 2m
tags = f1,f2
names = x,y
need = file-need
`
	with := func(mod func(*cfgVals)) cfgVals {
		v := defaults()
		mod(&v)
		return v
	}
	fromFile := func(v *cfgVals) {
		*v = cfgVals{Str: "from-file", N: 2, UserBudget: 3.5, On: true, Wait: 2 * time.Minute, Tags: []string{"f1", "f2"}, Names: []string{"x,y"}, Need: "file-need"}
	}
	for _, tc := range []struct {
		name string
		file string // "" : no --config
		args []string
		env  []string
		want cfgVals
	}{
		{name: "defaults", args: []string{"--need", "need"}, want: defaults()},
		{name: "file sets every type", file: file, want: with(fromFile)},
		{name: "environment beats file", file: file,
			env:  []string{"DPLP_STR=from-env", "DPLP_N=7", "DPLP_USER_BUDGET=inf", "DPLP_ON=false", "DPLP_WAIT=90s", "DPLP_TAGS=e1", "DPLP_NAMES=e,f", "DPLP_NEED=env-need"},
			want: cfgVals{Str: "from-env", N: 7, UserBudget: math.Inf(1), On: false, Wait: 90 * time.Second, Tags: []string{"e1"}, Names: []string{"e,f"}, Need: "env-need"}},
		{name: "flags beat environment and file", file: file,
			args: []string{"--str", "flag", "-n", "9", "--user-budget=0", "--on=false", "--wait", "1ms", "--tags", "g", "--names", "h", "--need", "flag-need"},
			env:  []string{"DPLP_STR=from-env", "DPLP_N=7", "DPLP_ON=true", "DPLP_WAIT=90s", "DPLP_TAGS=e1"},
			want: cfgVals{Str: "flag", N: 9, UserBudget: 0, On: false, Wait: time.Millisecond, Tags: []string{"g"}, Names: []string{"h"}, Need: "flag-need"}},
		{name: "mixed sources", file: file, args: []string{"-n", "4"}, env: []string{"DPLP_WAIT=3s"},
			want: with(func(v *cfgVals) { fromFile(v); v.N = 4; v.Wait = 3 * time.Second })},
		{name: "environment only", args: nil, env: []string{"DPLP_NEED=e", "DPLP_TAGS=p,q", "PATH=/bin", "DPLP_UNRELATED=1", "DPLP_TEST_POSTGRES_DSN=postgres://x"},
			want: with(func(v *cfgVals) { v.Need = "e"; v.Tags = []string{"p", "q"} })},
		{name: "empty variable is unset", file: "need = f\nstr = file\n", env: []string{"DPLP_STR="},
			want: with(func(v *cfgVals) { v.Need = "f"; v.Str = "file" })},
		{name: "last duplicate variable wins", env: []string{"DPLP_NEED=first", "DPLP_NEED=second"},
			want: with(func(v *cfgVals) { v.Need = "second" })},
		{name: "quoted values keep # and blanks", file: "need = \"  a # b \"\nstr = \"sqlite:/x #1.db\" # comment\n",
			want: with(func(v *cfgVals) { v.Need = "  a # b "; v.Str = "sqlite:/x #1.db" })},
		{name: "# without a blank before it is part of the value", file: "need = postgres://h/db?x=1#frag\n",
			want: with(func(v *cfgVals) { v.Need = "postgres://h/db?x=1#frag" })},
		{name: "empty value, CRLF, BOM, blank lines", file: "\ufeffneed = n\r\n\r\n   \r\nstr =\r\n",
			want: with(func(v *cfgVals) { v.Need = "n"; v.Str = "" })},
		{name: "DPLP_CONFIG names the file", file: "@ENV@" + file, want: with(fromFile)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, env := tc.args, tc.env
			if tc.file != "" {
				text, viaEnv := strings.CutPrefix(tc.file, "@ENV@")
				p := writeConf(t, text)
				if viaEnv {
					env = []string{"DPLP_CONFIG=" + p}
				} else {
					args = append([]string{"--config", p}, args...)
				}
			}
			got, ran, err := runCfgCmd(t, args, env)
			if err != nil {
				t.Fatal(err)
			}
			if !ran {
				t.Fatal("the command did not run")
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestApplyConfigConfigFlagBeatsEnv: --config wins over $DPLP_CONFIG.
func TestApplyConfigConfigFlagBeatsEnv(t *testing.T) {
	a, b := writeConf(t, "need = a\n"), writeConf(t, "need = b\n")
	got, _, err := runCfgCmd(t, []string{"--config", b}, []string{"DPLP_CONFIG=" + a})
	if err != nil {
		t.Fatal(err)
	}
	if got.Need != "b" {
		t.Fatalf("need = %q, want b (from --config)", got.Need)
	}
}

// TestApplyConfigErrors: malformed lines, unknown keys and bad values are
// errors naming the file and line (or the variable); the command does not
// run, and string values (which may hold secrets) are never quoted.
func TestApplyConfigErrors(t *testing.T) {
	const secret = "s3cr3t-pass"
	for _, tc := range []struct {
		name string
		file string
		args []string
		env  []string
		want string // @F@ stands for the file's path
	}{
		{name: "line without =", file: "need = x\n# ok\njust-a-word\n", want: "@F@:3: expected `key = value`"},
		{name: "missing key", file: "need = x\n = 3\n", want: "@F@:2: missing key before '='"},
		{name: "unknown key with suggestion", file: "need = x\nuser_budget = 3\n", want: `@F@:2: unknown key "user_budget" (did you mean "user-budget"?)`},
		{name: "unknown key with dashes", file: "--need = x\n", want: `@F@:1: unknown key "--need" (did you mean "need"?)`},
		{name: "unknown key", file: "zzzzzz = 1\n", want: `@F@:1: unknown key "zzzzzz"`},
		{name: "help is not a setting", file: "help = true\n", want: `@F@:1: unknown key "help"`},
		{name: "config inside config", file: "config = other.conf\n", want: "@F@:1: config cannot be set inside a configuration file"},
		{name: "duplicate key", file: "n = 1\nneed = x\n\nn = 2\n", want: "@F@:4: n is already set on line 1"},
		{name: "bad int", file: "need = x\nn = abc\n", want: "@F@:2: n: want an integer"},
		{name: "bad float", file: "need = x\nuser-budget = lots\n", want: "@F@:2: user-budget: want a number"},
		{name: "bad bool", file: "on = yes please\nneed = x\n", want: "@F@:1: on: want true or false"},
		{name: "bad duration", file: "need = x\n\nwait = 5\n", want: "@F@:3: wait: want a duration"},
		{name: "bad csv in slice", file: "need = x\ntags = a,\"b\n", want: "@F@:2: tags: want a valid stringSlice"},
		{name: "unterminated quote", file: "need = \"abc\n", want: "@F@:1: need: unterminated or malformed quoted value"},
		{name: "text after quote", file: "need = \"abc\" def\n", want: "@F@:1: need: text after the closing quote"},
		{name: "bad value overridden by a flag", file: "need = x\nn = abc\n", args: []string{"-n", "3"}, want: "@F@:2: n: want an integer"},
		{name: "bad environment value", env: []string{"DPLP_NEED=x", "DPLP_WAIT=5"}, want: "environment variable DPLP_WAIT: wait: want a duration"},
		{name: "bad environment value overridden by a flag", env: []string{"DPLP_NEED=x", "DPLP_N=ten"}, args: []string{"-n", "3"}, want: "environment variable DPLP_N: n: want an integer"},
		{name: "missing file", file: "@MISSING@", want: "--config: open @F@: no such file"},
		{name: "secret in a string value is not quoted", file: "str = postgres://u:" + secret + "@h/db\nneed = x\nn = 1.5\n", want: "@F@:3: n: want an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, path := tc.args, ""
			if tc.file != "" {
				if tc.file == "@MISSING@" {
					path = filepath.Join(t.TempDir(), "missing.conf")
				} else {
					path = writeConf(t, tc.file)
				}
				args = append([]string{"--config", path}, args...)
			}
			_, ran, err := runCfgCmd(t, args, tc.env)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if ran {
				t.Fatal("the command ran despite the error")
			}
			want := strings.ReplaceAll(tc.want, "@F@", path)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q\ndoes not contain %q", err, want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error shows a secret: %v", err)
			}
		})
	}
}

// TestApplyConfigNothingSetOnError: a bad value on a later line leaves the
// earlier lines' flags unset.
func TestApplyConfigNothingSetOnError(t *testing.T) {
	var s string
	var n int
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().StringVar(&s, "s", "def", "")
	cmd.Flags().IntVar(&n, "n", 1, "")
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	err := applyConfig(cmd, writeConf(t, "s = file\nn = x\n"), nil)
	if err == nil || !strings.Contains(err.Error(), ":2: n:") {
		t.Fatalf("error %v, want one about n", err)
	}
	if s != "def" || cmd.Flags().Changed("s") {
		t.Fatalf("s = %q (changed %v) after a failed applyConfig, want the default", s, cmd.Flags().Changed("s"))
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"graph":              "DPLP_GRAPH",
		"user-budget":        "DPLP_USER_BUDGET",
		"user-budget-approx": "DPLP_USER_BUDGET_APPROX",
		"admin-token-file":   "DPLP_ADMIN_TOKEN_FILE",
		"tls.cert":           "DPLP_TLS_CERT",
		"k-max":              "DPLP_K_MAX",
	} {
		if got := envName(in); got != want {
			t.Errorf("envName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigValue(t *testing.T) {
	for _, tc := range []struct{ raw, want, err string }{
		{raw: " plain ", want: "plain"},
		{raw: "a b c", want: "a b c"},
		{raw: "v # c", want: "v"},
		{raw: "v\t# c", want: "v"},
		{raw: "v#not-a-comment", want: "v#not-a-comment"},
		{raw: "# only a comment", want: ""},
		{raw: "", want: ""},
		{raw: `"q # x"`, want: "q # x"},
		{raw: `"tab\there" # c`, want: "tab\there"},
		{raw: `"open`, err: "unterminated"},
		{raw: `"a" b`, err: "after the closing quote"},
	} {
		got, err := configValue(tc.raw)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("configValue(%q) = %q, %v; want an error containing %q", tc.raw, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("configValue(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}
