package cmdcheck

import (
	"slices"
	"strings"
)

// remoteRules: what is kept elsewhere (cloud storage, clusters,
// infrastructure, containers), installed packages, and the Hermes gateway.
var remoteRules = map[string]rule{
	"aws":    awsRule,
	"gsutil": gsutilRule,
	"gcloud": verbAnywhereRule(reasonRemoteDelete, "delete"), "az": verbAnywhereRule(reasonRemoteDelete, "delete", "delete-batch", "purge"),
	"rclone":    verbAnywhereRule(reasonRemoteDelete, "purge", "delete", "sync"),
	"kubectl":   verbAnywhereRule(reasonRemoteDelete, "delete"),
	"helm":      verbAnywhereRule(reasonRemoteDelete, "uninstall", "delete", "del", "un"),
	"terraform": terraformRule, "tofu": terraformRule, "terragrunt": terraformRule,
	"pulumi": verbAnywhereRule(reasonRemoteDelete, "destroy", "down"),
	"gh":     verbAnywhereRule(reasonRemoteDelete, "delete"),

	"docker": dockerRule, "podman": dockerRule, "docker-compose": composeRule, "podman-compose": composeRule,

	"npm":  verbRule(reasonUninstall, "uninstall", "unlink", "remove", "rm", "r", "un"),
	"pnpm": verbRule(reasonUninstall, "uninstall", "remove", "rm", "un"), "bun": verbRule(reasonUninstall, "remove", "rm"),
	"yarn": yarnRule,
	"pip":  verbRule(reasonUninstall, "uninstall"), "pip3": verbRule(reasonUninstall, "uninstall"),
	"pipx": verbRule(reasonUninstall, "uninstall", "uninstall-all"), "uv": uvRule,
	"brew": verbRule(reasonUninstall, "uninstall", "remove", "rm", "autoremove"),
	"apt":  verbRule(reasonUninstall, "remove", "purge", "autoremove"), "apt-get": verbRule(reasonUninstall, "remove", "purge", "autoremove"),
	"aptitude": verbRule(reasonUninstall, "remove", "purge"),
	"dnf":      verbRule(reasonUninstall, "remove", "erase", "autoremove"), "yum": verbRule(reasonUninstall, "remove", "erase", "autoremove"),
	"microdnf": verbRule(reasonUninstall, "remove"),
	"zypper":   verbRule(reasonUninstall, "remove", "rm"), "apk": verbRule(reasonUninstall, "del"),
	"snap": verbRule(reasonUninstall, "remove"), "flatpak": verbRule(reasonUninstall, "uninstall", "remove"),
	"gem": verbRule(reasonUninstall, "uninstall"), "cargo": verbRule(reasonUninstall, "uninstall"),
	"conda": verbRule(reasonUninstall, "remove", "uninstall"), "mamba": verbRule(reasonUninstall, "remove", "uninstall"),
	"port":   verbRule(reasonUninstall, "uninstall"),
	"pacman": pacmanRule, "dpkg": dpkgRule, "rpm": rpmRule,

	"hermes": hermesRule,
}

// verbs lists a command's operands: the words that are not options,
// with "maybe" marking those right after an option without =VALUE, which
// may be its value rather than an operand (npm --prefix DIR uninstall x).
func verbs(args []string) (ops []string, maybe []bool) {
	after := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			after = !strings.Contains(a, "=")
			continue
		}
		ops = append(ops, a)
		maybe = append(maybe, after)
		after = false
	}
	return ops, maybe
}

// verbAt is the command's subcommand: its first operand, or the next
// when the first may be an option's value; every reading is returned.
func verbAt(args []string) []string {
	ops, maybe := verbs(args)
	var out []string
	for i, op := range ops {
		out = append(out, strings.ToLower(op))
		if !maybe[i] {
			break
		}
	}
	return out
}

// verbRule flags the program when its subcommand is one of names (npm
// uninstall, apt remove).
func verbRule(reason string, names ...string) rule {
	return func(s *scan, cmd *command) {
		for _, v := range verbAt(cmd.args) {
			if slices.Contains(names, v) {
				s.add(reason)
				return
			}
		}
	}
}

// verbAnywhereRule flags the program when one of its operands is one of
// names: the subcommand of a tool with nested groups (gcloud compute
// instances delete, kubectl -n x delete pod y).
func verbAnywhereRule(reason string, names ...string) rule {
	return func(s *scan, cmd *command) {
		ops, _ := verbs(cmd.args)
		for _, op := range ops {
			if slices.Contains(names, strings.ToLower(op)) {
				s.add(reason)
				return
			}
		}
	}
}

// awsRule: aws s3 rm --recursive, s3 rb, s3 sync --delete, and any
// delete-, terminate-, remove-, purge- or deregister- operation.
func awsRule(s *scan, cmd *command) {
	ops, _ := verbs(cmd.args)
	for i, op := range ops {
		op = strings.ToLower(op)
		for _, prefix := range []string{"delete-", "terminate-", "remove-", "purge-", "deregister-", "destroy-"} {
			if strings.HasPrefix(op, prefix) {
				s.add(reasonRemoteDelete)
				return
			}
		}
		if op != "s3" || i+1 >= len(ops) {
			continue
		}
		switch strings.ToLower(ops[i+1]) {
		case "rb":
			s.add(reasonRemoteDelete)
		case "rm":
			if slices.ContainsFunc(cmd.args, func(a string) bool { return longOpt(a, "recursive") }) {
				s.add(reasonRemoteDelete)
			}
		case "sync":
			if slices.ContainsFunc(cmd.args, func(a string) bool { return longOpt(a, "delete") }) {
				s.add(reasonRemoteDelete)
			}
		}
		return
	}
}

// gsutilRule: gsutil rm -r (or of a wildcard), rb, rsync -d.
func gsutilRule(s *scan, cmd *command) {
	for _, v := range verbAt(cmd.args) {
		switch v {
		case "rb":
			s.add(reasonRemoteDelete)
		case "rm":
			for _, a := range cmd.args {
				if shortFlag(a, "rRa") || longOpt(a, "recursive", "all-versions") || strings.HasSuffix(a, "*") {
					s.add(reasonRemoteDelete)
				}
			}
		case "rsync":
			if slices.ContainsFunc(cmd.args, func(a string) bool { return shortFlag(a, "d") || longOpt(a, "delete-unmatched-destination-objects") }) {
				s.add(reasonRemoteDelete)
			}
		}
	}
}

// terraformRule: terraform destroy and apply -destroy.
func terraformRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "destroy" || a == "-destroy" || a == "--destroy" {
			s.add(reasonRemoteDelete)
			return
		}
	}
}

// yarnRule: yarn remove, yarn global remove.
func yarnRule(s *scan, cmd *command) {
	ops, _ := verbs(cmd.args)
	if len(ops) > 0 && ops[0] == "global" {
		ops = ops[1:]
	}
	if len(ops) > 0 && (ops[0] == "remove" || ops[0] == "unlink") {
		s.add(reasonUninstall)
	}
}

// uvRule: uv remove, uv pip uninstall, uv tool uninstall.
func uvRule(s *scan, cmd *command) {
	ops, _ := verbs(cmd.args)
	if len(ops) > 0 && ops[0] == "remove" || len(ops) > 1 && (ops[0] == "pip" || ops[0] == "tool") && ops[1] == "uninstall" {
		s.add(reasonUninstall)
	}
}

// pacmanRule: pacman -R (and -Rs, -Rns, --remove).
func pacmanRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if len(a) > 1 && a[0] == '-' && a[1] == 'R' || longOpt(a, "remove") {
			s.add(reasonUninstall)
		}
	}
}

// dpkgRule: dpkg -r, -P (--remove, --purge).
func dpkgRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if a == "-r" || a == "-P" || longOpt(a, "remove", "purge") {
			s.add(reasonUninstall)
		}
	}
}

// rpmRule: rpm -e (--erase).
func rpmRule(s *scan, cmd *command) {
	for _, a := range cmd.args {
		if shortFlag(a, "e") && !strings.HasPrefix(a, "--") || longOpt(a, "erase") {
			s.add(reasonUninstall)
		}
	}
}

// dockerGlobals are the options docker and podman take before the
// subcommand that send every command to another daemon.
func dockerGlobals(args []string) (redirect bool, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return redirect, args[i:]
		}
		name, _, attached := strings.Cut(a, "=")
		switch name {
		case "-H", "--host", "-c", "--context", "--url", "--connection", "--identity":
			redirect = true
			if !attached {
				i++
			}
		case "-r", "--remote":
			redirect = true
		case "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey", "--root", "--runroot", "--storage-driver", "--log-driver":
			if !attached {
				i++
			}
		}
	}
	return redirect, nil
}

// dockerRule: docker and podman sent to another daemon (-H, --context,
// podman --remote, docker context use), and stopping, killing or removing
// containers and their data.
func dockerRule(s *scan, cmd *command) {
	redirect, rest := dockerGlobals(cmd.args)
	if redirect {
		s.add(reasonDockerHost)
	}
	if len(rest) == 0 {
		return
	}
	sub, args := strings.ToLower(rest[0]), rest[1:]
	force := slices.ContainsFunc(args, func(a string) bool { return shortFlag(a, "fv") || longOpt(a, "force", "volumes") })
	switch sub {
	case "stop", "kill", "restart":
		s.add(reasonContainers)
	case "rm":
		if force {
			s.add(reasonContainers)
		}
	case "container":
		if ops, _ := verbs(args); len(ops) > 0 && (ops[0] == "stop" || ops[0] == "kill" || ops[0] == "restart" || ops[0] == "prune" || ops[0] == "rm" && force) {
			s.add(reasonContainers)
		}
	case "volume", "system":
		if ops, _ := verbs(args); len(ops) > 0 && (ops[0] == "rm" || ops[0] == "prune") {
			s.add(reasonContainers)
		}
	case "compose":
		composeRule(s, &command{name: "docker-compose", args: args, fields: cmd.fields[len(cmd.fields)-len(args):]})
	case "context":
		if ops, _ := verbs(args); len(ops) > 0 && ops[0] == "use" {
			s.add(reasonDockerHost)
		}
	}
}

// composeRule: docker compose stop, kill, restart, down, rm.
func composeRule(s *scan, cmd *command) {
	for _, v := range verbAt(cmd.args) {
		switch v {
		case "stop", "kill", "restart", "down", "rm":
			s.add(reasonContainers)
			return
		}
	}
}

// dockerHostVars point docker and podman at another daemon.
var dockerHostVars = []string{"DOCKER_HOST=", "DOCKER_CONTEXT=", "CONTAINER_HOST=", "CONTAINER_CONNECTION="}

// hermesRule: hermes gateway stop and restart, and hermes update (which
// restarts it), kill the agents it runs; hermes gateway run in the
// background or behind nohup or setsid starts one its service manager
// does not know.
func hermesRule(s *scan, cmd *command) {
	ops, _ := verbs(cmd.args)
	for i, op := range ops[:min(2, len(ops))] {
		switch {
		case op == "update":
			s.add(reasonGateway)
		case op == "gateway" && i+1 < len(ops):
			switch ops[i+1] {
			case "stop", "restart":
				s.add(reasonGateway)
			case "run":
				if cmd.stmt != nil && cmd.stmt.Background || slices.Contains(cmd.via, "nohup") || slices.Contains(cmd.via, "setsid") {
					s.add(reasonGateway)
				}
			}
		default:
			continue
		}
		return
	}
}
