package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const composeFile = "../../docker-compose.yml"

// composeService is the part of a compose service these tests check.
type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Profiles    []string          `yaml:"profiles"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Secrets     []string          `yaml:"secrets"`
	Volumes     []string          `yaml:"volumes"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Deploy struct {
		Resources struct {
			Reservations struct {
				Devices []struct {
					Driver       string   `yaml:"driver"`
					Count        any      `yaml:"count"`
					Capabilities []string `yaml:"capabilities"`
				} `yaml:"devices"`
			} `yaml:"reservations"`
		} `yaml:"resources"`
	} `yaml:"deploy"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

type composeDoc struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

func loadCompose(t *testing.T) (composeDoc, *yaml.Node) {
	t.Helper()
	b, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc composeDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", composeFile, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	return doc, &root
}

// envNames collects the env tags kong reads for v's flags, embedded structs included.
func envNames(t reflect.Type, into map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); isCmd {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			envNames(f.Type, into)
			continue
		}
		for _, e := range strings.Split(f.Tag.Get("env"), ",") {
			if e != "" {
				into[e] = true
			}
		}
	}
}

// commandEnv is the environment the given subcommand reads: the global flags plus its own.
func commandEnv(t *testing.T, sub string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	ct := reflect.TypeFor[cli]()
	envNames(ct, names)
	for i := range ct.NumField() {
		f := ct.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); isCmd && strings.ToLower(f.Name) == sub {
			envNames(f.Type, names)
			return names
		}
	}
	t.Fatalf("no subcommand %q in the cli struct", sub)
	return nil
}

func TestComposeServices(t *testing.T) {
	doc, _ := loadCompose(t)
	for _, name := range []string{"postgres", "migrate", "worker", "worker-cpu"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("service %q missing from %s", name, composeFile)
		}
	}

	pg := doc.Services["postgres"]
	if !strings.HasPrefix(pg.Image, "postgres:15") {
		t.Errorf("postgres image %q, want postgres:15", pg.Image)
	}
	if pg.Healthcheck == nil || !strings.Contains(strings.Join(pg.Healthcheck.Test, " "), "pg_isready") {
		t.Errorf("postgres needs a pg_isready healthcheck, has %+v", pg.Healthcheck)
	}
	if _, ok := doc.Volumes["pgdata"]; !ok {
		t.Error("postgres data needs a named volume (pgdata)")
	}

	dependsOn := func(svc, on, cond string) {
		if got := doc.Services[svc].DependsOn[on].Condition; got != cond {
			t.Errorf("%s depends_on %s: condition %q, want %q", svc, on, got, cond)
		}
	}
	dependsOn("migrate", "postgres", "service_healthy")
	for _, w := range []string{"worker", "worker-cpu"} {
		dependsOn(w, "postgres", "service_healthy")
		dependsOn(w, "migrate", "service_completed_successfully")
	}

	if c := doc.Services["migrate"].Command; !slices.Equal(c, []string{"migrate"}) {
		t.Errorf("migrate command %q, want [migrate] (the image's entrypoint is cuzk)", c)
	}
	for _, svc := range []string{"worker", "worker-cpu"} {
		s := doc.Services[svc]
		if !slices.Equal(s.Command, []string{"worker"}) {
			t.Errorf("%s command %q, want [worker]", svc, s.Command)
		}
		if s.Build == nil {
			t.Errorf("%s must build from the Dockerfile", svc)
		}
		// The healthcheck asks /readyz on the port the worker serves (CUZK_HTTP), and
		// that port is published for the dashboard and Prometheus.
		_, port, _ := strings.Cut(s.Environment["CUZK_HTTP"], ":")
		if s.Healthcheck == nil || port == "" {
			t.Errorf("%s: needs CUZK_HTTP (%q) and a healthcheck", svc, s.Environment["CUZK_HTTP"])
		} else if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, "/dev/tcp/127.0.0.1/"+port+" ") || !strings.Contains(hc, "GET /readyz") {
			t.Errorf("%s healthcheck %q does not ask /readyz on port %s", svc, hc, port)
		}
		if len(s.Ports) != 1 || !strings.HasSuffix(s.Ports[0], ":"+port) || !strings.HasPrefix(s.Ports[0], "127.0.0.1:") {
			t.Errorf("%s ports %q: want the HTTP port %s published on the host's loopback", svc, s.Ports, port)
		}
		// The worker waits up to CUZK_SHUTDOWN_GRACE for in-flight work on SIGTERM;
		// compose must not SIGKILL it before that.
		grace, err1 := time.ParseDuration(defaultOf(s.Environment["CUZK_SHUTDOWN_GRACE"]))
		stop, err2 := time.ParseDuration(s.StopGracePeriod)
		if err1 != nil || err2 != nil || stop <= grace {
			t.Errorf("%s: stop_grace_period %q must exceed CUZK_SHUTDOWN_GRACE %q", svc, s.StopGracePeriod, s.Environment["CUZK_SHUTDOWN_GRACE"])
		}
	}

	gpu := doc.Services["worker"]
	devs := gpu.Deploy.Resources.Reservations.Devices
	if len(devs) != 1 || devs[0].Driver != "nvidia" || devs[0].Count != "all" || !slices.Equal(devs[0].Capabilities, []string{"gpu"}) {
		t.Errorf("worker GPU reservation: %+v, want driver nvidia, count all, capabilities [gpu]", devs)
	}
	if b := gpu.Environment["CUZK_BACKEND"]; b != "cuda" && b != "auto" {
		t.Errorf("worker CUZK_BACKEND %q, want cuda or auto", b)
	}
	cpu := doc.Services["worker-cpu"]
	if !slices.Equal(cpu.Profiles, []string{"cpu"}) {
		t.Errorf("worker-cpu profiles %q, want [cpu]", cpu.Profiles)
	}
	if b := cpu.Environment["CUZK_BACKEND"]; b != "cpu" {
		t.Errorf("worker-cpu CUZK_BACKEND %q, want cpu", b)
	}
	if len(cpu.Deploy.Resources.Reservations.Devices) != 0 {
		t.Error("worker-cpu must not reserve GPUs")
	}
}

// TestComposeEnvironmentIsRead checks that every DATABASE_URL/CUZK_* variable the
// compose file sets is one the service's subcommand reads (a misspelt name would be
// silently ignored by the binary).
func TestComposeEnvironmentIsRead(t *testing.T) {
	doc, _ := loadCompose(t)
	for name, svc := range doc.Services {
		sub := ""
		if len(svc.Command) > 0 {
			sub = svc.Command[0]
		}
		if sub == "" {
			continue // not a cuzk service (postgres)
		}
		reads := commandEnv(t, sub)
		if len(svc.Environment) == 0 {
			t.Errorf("service %s sets no environment", name)
		}
		for k := range svc.Environment {
			if (k == "DATABASE_URL" || strings.HasPrefix(k, "CUZK_")) && !reads[k] {
				t.Errorf("service %s sets %s, which `cuzk %s` does not read (it reads %v)", name, k, sub, sortedKeys(reads))
			}
		}
		if !strings.HasPrefix(svc.Environment["DATABASE_URL"], "postgres://") {
			t.Errorf("service %s: DATABASE_URL %q", name, svc.Environment["DATABASE_URL"])
		}
	}
	// The help text is what operators read; it must name the same variables.
	help := cuzkDB(t, "", "worker", "--help")
	mustOK(t, help)
	inHelp := map[string]bool{}
	for _, m := range regexp.MustCompile(`\(\$([A-Z0-9_]+)\)`).FindAllStringSubmatch(help.stdout, -1) {
		inHelp[m[1]] = true
	}
	if want := commandEnv(t, "worker"); !reflect.DeepEqual(inHelp, want) {
		t.Errorf("cuzk worker --help names %v, the flags read %v", sortedKeys(inHelp), sortedKeys(want))
	}
}

// TestComposeEnvironmentIsCommented requires a comment on every variable the compose
// file sets, including those in extension blocks shared through anchors.
func TestComposeEnvironmentIsCommented(t *testing.T) {
	_, root := loadCompose(t)
	var walk func(n *yaml.Node, path string)
	checked := 0
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.DocumentNode || n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				walk(c, path)
			}
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := path + "." + k.Value
			if (k.Value == "environment" || strings.HasPrefix(k.Value, "x-")) && v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					ek := v.Content[j]
					if ek.Value == "<<" {
						continue
					}
					checked++
					if strings.TrimSpace(ek.HeadComment+ek.LineComment) == "" {
						t.Errorf("%s.%s (line %d) has no comment", p, ek.Value, ek.Line)
					}
				}
				continue
			}
			walk(v, p)
		}
	}
	walk(root, "")
	if checked < 10 {
		t.Errorf("found only %d environment variables in %s; the walk is broken", checked, composeFile)
	}
}

// TestComposeWorkerEnvironmentParses runs `cuzk worker` with worker-cpu's environment
// (defaults substituted as compose would, directories redirected to temp dirs) against
// a database that is not there: every value must be accepted, so the run gets as far
// as waiting for the database (and exits 0 on SIGTERM), not failing on usage (exit 2).
func TestComposeWorkerEnvironmentParses(t *testing.T) {
	t.Parallel()
	doc, _ := loadCompose(t)
	for _, svc := range []string{"worker-cpu"} {
		var env []string
		for k, v := range doc.Services[svc].Environment {
			v = defaultOf(v)
			switch k {
			case "DATABASE_URL":
				v = "postgres://cuzk@127.0.0.1:1/cuzk?sslmode=disable&connect_timeout=2"
			case "CUZK_KEYS_DIR", "CUZK_CACHE_DIR":
				v = filepath.Join(t.TempDir(), "d")
			}
			env = append(env, k+"="+v)
		}
		r := cuzkUntilLog(t, env, "database unavailable, waiting", time.Minute, "worker")
		wantExit(t, r, exitOK, "database at 127.0.0.1:1")
	}
}

// defaultOf substitutes compose's ${VAR:-default} with its default.
func defaultOf(v string) string {
	return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}`).ReplaceAllString(v, "$1")
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDockerfile checks the image's shape: a multi-stage build whose runtime stage is an
// NVIDIA CUDA runtime image carrying the CUDA prover library where the binary looks.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var lib, entry string
	copied := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "FROM":
			froms = append(froms, f[1])
		case "COPY":
			if strings.HasPrefix(f[1], "--from=") {
				copied[f[len(f)-1]] = true
			}
		case "ENV":
			if m := regexp.MustCompile(`CUZK_GPU_LIB=(\S+)`).FindStringSubmatch(line); m != nil {
				lib = m[1]
			}
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		}
	}
	if len(froms) < 3 || !strings.HasPrefix(froms[0], "golang:") {
		t.Errorf("stages %q: want a Go build stage, a CUDA build stage and the runtime", froms)
	}
	if rt := froms[len(froms)-1]; !strings.HasPrefix(rt, "nvidia/cuda:") || !strings.Contains(rt, "-runtime-") {
		t.Errorf("runtime stage %q: want an nvidia/cuda runtime image", rt)
	}
	if lib == "" || !copied[lib] || !strings.HasSuffix(lib, "libcuzkgpu.so") {
		t.Errorf("CUZK_GPU_LIB=%q must name the libcuzkgpu.so copied from the CUDA stage (copied: %v)", lib, copied)
	}
	if !copied["/usr/local/bin/cuzk"] || !strings.Contains(entry, "/usr/local/bin/cuzk") {
		t.Errorf("the image must run the cuzk binary it copies (ENTRYPOINT %s)", entry)
	}
}
