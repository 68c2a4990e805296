package shared

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func TestScrubEnvRules(t *testing.T) {
	tests := []struct {
		name        string
		entry       string
		passthrough []string
		windows     bool
		kept        bool
		hermes      bool // reported in droppedHermes
	}{
		// Rule 1: passthrough, even when secret-named.
		{name: "passthrough secret-named", entry: "MY_API_KEY=x", passthrough: []string{"MY_API_KEY"}, kept: true},
		{name: "passthrough HERMES", entry: "HERMES_BASE_URL=http://h", passthrough: []string{"HERMES_BASE_URL"}, kept: true},
		{name: "passthrough plain", entry: "FOO=1", passthrough: []string{"FOO"}, kept: true},
		{name: "passthrough is exact", entry: "MY_API_KEY_2=x", passthrough: []string{"MY_API_KEY"}},
		{name: "passthrough case-sensitive off Windows", entry: "foo=1", passthrough: []string{"FOO"}},
		{name: "passthrough case-insensitive on Windows", entry: "foo=1", passthrough: []string{"FOO"}, windows: true, kept: true},
		{name: "managed credential refused", entry: "OPENAI_API_KEY=sk", passthrough: []string{"OPENAI_API_KEY"}},
		{name: "managed credential refused any case", entry: "anthropic_api_key=sk", passthrough: []string{"anthropic_api_key"}},
		{name: "RPC token refused", entry: "HERMES_RPC_TOKEN=t", passthrough: []string{"HERMES_RPC_TOKEN"}},

		// Rule 2: secret-named, before the safe prefixes.
		{name: "KEY", entry: "SOME_KEY=1"},
		{name: "lower-case token", entry: "github_token=1"},
		{name: "SECRET after PATH prefix", entry: "PATH_SECRET=1"},
		{name: "HOME with PASSWORD", entry: "HOME_PASSWORD=1"},
		{name: "CREDENTIAL", entry: "GOOGLE_APPLICATION_CREDENTIALS=/f"},
		{name: "PASSWD", entry: "DB_PASSWD=1"},
		{name: "AUTH", entry: "AUTHOR=me"},
		{name: "DSN", entry: "SENTRY_DSN=1"},
		{name: "WEBHOOK", entry: "SLACK_WEBHOOK=1"},
		{name: "CREDS", entry: "AWS_CREDS=1"},
		{name: "BEARER", entry: "BEARER=1"},
		{name: "APIKEY", entry: "SERVICEAPIKEY=1"},
		{name: "secret HERMES not reported", entry: "HERMES_API_KEY=1"},
		{name: "TERM with TOKEN", entry: "TERM_TOKEN=1"},

		// Rule 3: safe prefixes.
		{name: "PATH", entry: "PATH=/usr/bin", kept: true},
		{name: "HOMEBREW by HOME prefix", entry: "HOMEBREW_X=1", kept: true},
		{name: "USER", entry: "USER=me", kept: true},
		{name: "LANG", entry: "LANG=C.UTF-8", kept: true},
		{name: "LC_", entry: "LC_ALL=C", kept: true},
		{name: "TERM", entry: "TERM=xterm", kept: true},
		{name: "TMPDIR", entry: "TMPDIR=/tmp", kept: true},
		{name: "TEMP", entry: "TEMP=/tmp", kept: true},
		{name: "SHELL", entry: "SHELL=/bin/sh", kept: true},
		{name: "LOGNAME", entry: "LOGNAME=me", kept: true},
		{name: "XDG_", entry: "XDG_RUNTIME_DIR=/run", kept: true},
		{name: "PYTHONPATH", entry: "PYTHONPATH=/x", kept: true},
		{name: "VIRTUAL_ENV", entry: "VIRTUAL_ENV=/v", kept: true},
		{name: "CONDA", entry: "CONDA_PREFIX=/c", kept: true},
		{name: "empty value", entry: "LANG=", kept: true},
		{name: "value with =", entry: "LANG=a=b", kept: true},
		{name: "prefix case-sensitive off Windows", entry: "Path=/x"},
		{name: "prefix case-insensitive on Windows", entry: "Path=C:\\x", windows: true, kept: true},

		// Rule 4: exact HERMES_* names.
		{name: "HERMES_HOME", entry: "HERMES_HOME=/h", kept: true},
		{name: "HERMES_PROFILE", entry: "HERMES_PROFILE=p", kept: true},
		{name: "HERMES_CONFIG", entry: "HERMES_CONFIG=c", kept: true},
		{name: "HERMES_ENV", entry: "HERMES_ENV=e", kept: true},
		{name: "HERMES_HOME_X not exact", entry: "HERMES_HOME_X=1", hermes: true},

		// Rule 5: Windows system variables, only on Windows.
		{name: "SYSTEMROOT off Windows", entry: "SYSTEMROOT=C:\\Windows"},
		{name: "SystemRoot on Windows", entry: "SystemRoot=C:\\Windows", windows: true, kept: true},
		{name: "PROGRAMFILES(X86) on Windows", entry: "ProgramFiles(x86)=C:\\P", windows: true, kept: true},
		{name: "COMSPEC on Windows", entry: "COMSPEC=cmd.exe", windows: true, kept: true},
		{name: "OS on Windows", entry: "OS=Windows_NT", windows: true, kept: true},
		{name: "OS off Windows", entry: "OS=Windows_NT"},
		{name: "USERPROFILE off Windows by USER prefix", entry: "USERPROFILE=/u", kept: true},
		{name: "Windows hidden drive variable", entry: "=C:=C:\\x", windows: true},

		// Rule 6: everything else.
		{name: "HERMES_BASE_URL dropped and reported", entry: "HERMES_BASE_URL=http://h", hermes: true},
		{name: "other dropped", entry: "EDITOR=vim"},
		{name: "no equals", entry: "PATH"},
		{name: "empty name", entry: "=x"},
		{name: "hermes lower-case off Windows not reported", entry: "hermes_x=1"},
		{name: "hermes lower-case on Windows reported", entry: "hermes_x=1", windows: true, hermes: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, dropped := ScrubEnv([]string{tt.entry}, EnvOptions{Passthrough: tt.passthrough, Windows: tt.windows})
			if got := len(kept) == 1; got != tt.kept {
				t.Errorf("kept = %q, want kept=%v", kept, tt.kept)
			}
			if len(kept) == 1 && kept[0] != tt.entry {
				t.Errorf("kept entry changed: %q", kept[0])
			}
			if got := len(dropped) == 1; got != tt.hermes {
				t.Errorf("droppedHermes = %q, want reported=%v", dropped, tt.hermes)
			}
		})
	}
}

func TestScrubEnvOrderAndReport(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"HERMES_ZED=1",
		"OPENAI_API_KEY=sk",
		"HERMES_BASE_URL=u",
		"HOME=/home/me",
		"HERMES_ALPHA=1",
		"HERMES_ALPHA=2",
		"HERMES_TOKEN=t",
		"MY_API_KEY=k",
		"LANG=C",
	}
	kept, dropped := ScrubEnv(environ, EnvOptions{Passthrough: []string{"MY_API_KEY", "OPENAI_API_KEY"}})
	wantKept := []string{"PATH=/bin", "HOME=/home/me", "MY_API_KEY=k", "LANG=C"}
	if !reflect.DeepEqual(kept, wantKept) {
		t.Errorf("kept = %q, want %q", kept, wantKept)
	}
	wantDropped := []string{"HERMES_ALPHA", "HERMES_BASE_URL", "HERMES_ZED"}
	if !reflect.DeepEqual(dropped, wantDropped) {
		t.Errorf("droppedHermes = %q, want %q", dropped, wantDropped)
	}
	want := "execute_code: dropped 3 non-allowlisted HERMES_* var(s): HERMES_ALPHA, HERMES_BASE_URL, HERMES_ZED (add them to terminal.env_passthrough to pass them through)"
	if got := DroppedHermesLine(dropped); got != want {
		t.Errorf("DroppedHermesLine =\n  %s\nwant\n  %s", got, want)
	}
}

func TestScrubEnvEmpty(t *testing.T) {
	kept, dropped := ScrubEnv(nil, EnvOptions{})
	if len(kept) != 0 || dropped != nil {
		t.Fatalf("got %q %q", kept, dropped)
	}
}

func TestDroppedHermesLine(t *testing.T) {
	if got := DroppedHermesLine(nil); got != "" {
		t.Errorf("DroppedHermesLine(nil) = %q", got)
	}
	want := "execute_code: dropped 1 non-allowlisted HERMES_* var(s): HERMES_BASE_URL (add them to terminal.env_passthrough to pass them through)"
	if got := DroppedHermesLine([]string{"HERMES_BASE_URL"}); got != want {
		t.Errorf("got %q", got)
	}
}

func TestRefusedPassthrough(t *testing.T) {
	got := RefusedPassthrough([]string{"MY_API_KEY", "OPENAI_API_KEY", "HERMES_BASE_URL", "anthropic_api_key", "HERMES_RPC_TOKEN"})
	want := []string{"OPENAI_API_KEY", "anthropic_api_key", "HERMES_RPC_TOKEN"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := RefusedPassthrough([]string{"FOO"}); got != nil {
		t.Fatalf("got %q, want nil", got)
	}
}

func TestManagedCredentialsAreSecretNamed(t *testing.T) {
	// Every managed credential is also dropped by rule 2, so refusing it in rule 1 can never
	// let it through by another rule.
	for _, name := range ManagedCredentials {
		kept, _ := ScrubEnv([]string{name + "=v"}, EnvOptions{Passthrough: []string{name}, Windows: true})
		if len(kept) != 0 {
			t.Errorf("%s was kept", name)
		}
	}
}

func ExampleScrubEnv() {
	environ := []string{
		"PATH=/usr/bin",
		"HOME=/home/me",
		"OPENAI_API_KEY=sk-123",
		"GITHUB_TOKEN=ghp_abc",
		"HERMES_HOME=/home/me/.hermes",
		"HERMES_BASE_URL=http://localhost:8080",
		"HERMES_KANBAN_DB=/tmp/k.db",
		"EDITOR=vim",
	}
	kept, dropped := ScrubEnv(environ, EnvOptions{Passthrough: []string{"HERMES_KANBAN_DB"}})
	for _, e := range kept {
		fmt.Println(e)
	}
	fmt.Println(DroppedHermesLine(dropped))
	// Output:
	// PATH=/usr/bin
	// HOME=/home/me
	// HERMES_HOME=/home/me/.hermes
	// HERMES_KANBAN_DB=/tmp/k.db
	// execute_code: dropped 1 non-allowlisted HERMES_* var(s): HERMES_BASE_URL (add them to terminal.env_passthrough to pass them through)
}

func TestScrubEnvManaged(t *testing.T) {
	// The variable holding the web search key is dropped even when its name
	// looks harmless and even when someone lists it for passthrough.
	environ := []string{"PATH=/bin", "SEARCHCFG=k-123", "PATHSEARCH=k-456", "OTHER_KEY=x"}
	kept, _ := ScrubEnv(environ, EnvOptions{Passthrough: []string{"SEARCHCFG", "OTHER_KEY"}, Managed: []string{"searchcfg", "PATHSEARCH"}})
	if want := []string{"PATH=/bin", "OTHER_KEY=x"}; !slices.Equal(kept, want) {
		t.Fatalf("kept %q, want %q", kept, want)
	}
	if got := RefusedPassthrough([]string{"SEARCHCFG", "OTHER_KEY", "tavily_api_key"}, "searchcfg"); !slices.Equal(got, []string{"SEARCHCFG", "tavily_api_key"}) {
		t.Fatalf("refused %q", got)
	}
}
