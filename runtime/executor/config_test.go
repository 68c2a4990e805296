package executor

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/internal/approval"
)

// TestExecutorCronMode: the executor passes approvals.cron_mode from its
// configuration.
func TestExecutorCronMode(t *testing.T) {
	t.Parallel()
	for cron, want := range map[string]string{config.CronModeDeny: config.CronModeDeny, config.CronModeApprove: config.CronModeApprove, "": config.CronModeAsk} {
		cfg := config.Default()
		cfg.Approvals.CronMode = cron
		e := New(Options{Config: &cfg, HermesHome: t.TempDir()})
		blocked := e.approvals.Script(context.Background(), nil, &approval.SessionGrants{Session: "s"}, config.KindAutomation, "print(1)")
		switch want {
		case config.CronModeDeny:
			require.Contains(t, blocked, "Cron jobs run without a user present")
		case config.CronModeApprove:
			require.Empty(t, blocked)
		default:
			require.Contains(t, blocked, "nobody is connected to approve it")
		}
		require.NoError(t, e.Close(context.Background()))
	}
}

// TestInjectTimezone: TZ comes from the effective zone (config.Config.Timezone,
// which config.Load resolves from $HERMES_TIMEZONE, code_execution.timezone
// and the top-level timezone), and a Config built in code may set only
// CodeExecution.Timezone. (Kept with the approval tests: both are the
// executor's reading of config.Config.)
func TestInjectTimezone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ top, ce, want string }{
		{"Asia/Tokyo", "", "TZ=Asia/Tokyo"},
		{"", "Europe/Paris", "TZ=Europe/Paris"},
		{"Asia/Tokyo", "Europe/Paris", "TZ=Asia/Tokyo"},
		{"", "", ""},
	} {
		cfg := config.Default()
		cfg.Timezone, cfg.CodeExecution.Timezone = tt.top, tt.ce
		e := New(Options{Config: &cfg, HermesHome: t.TempDir()})
		require.Equal(t, tt.want, strings.Join(e.inject(true), " "), "strict guest %+v", tt)
		got := strings.Join(e.inject(false), " ")
		if goruntime.GOOS == "windows" {
			tt.want = "" // as in Hermes: Windows programs do not read IANA names in TZ
		}
		require.Equal(t, tt.want, got, "%+v", tt)
		require.NoError(t, e.Close(context.Background()))
	}
}
