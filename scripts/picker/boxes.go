package main

// Three `qm serve` processes on 127.0.0.1, each with the same three demo models in one swap
// group and a different one preloaded, `metrics_on_api = "open"` behind an API key: the
// picker scrapes each box's API port without a key, as it would in a cluster.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const apiKey = "k"

var models = []string{"alpha", "beta", "gamma"}

type box struct {
	name string
	url  string
	port int
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
}

func boxConfig(dir, resident string) string {
	return fmt.Sprintf(`[server]
listen = ["127.0.0.1:0"]
start_port = %d
shutdown_timeout_s = 3
state_dir = %q
metrics_on_api = "open"
allowed_hosts = ["127.0.0.1", "localhost"]
api_keys = [%q]
preload = [%q]

[macros]
demo = "${QM_BIN} demo-upstream --port ${PORT} --name ${MODEL_ID}"

[groups.gpu]
members = ["alpha", "beta", "gamma"]
swap = true

# alpha answers one request at a time, each for 2 s: its box's queue can be made deep.
[models.alpha]
cmd = "${demo} --tokens 20 --token-ms 100"
aliases = ["alpha-chat"]
concurrency_limit = 1

[models.beta]
cmd = "${demo} --tokens 3"
aliases = ["beta-chat"]

[models.gamma]
cmd = "${demo} --tokens 3"
aliases = ["gamma-chat"]
`, 20000+rand.Intn(30000), filepath.Join(dir, "state"), apiKey, resident)
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

func startBox(qm, dir, name, resident string) (*box, error) {
	bdir := filepath.Join(dir, name)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(bdir, "quartermaster.toml")
	if err := os.WriteFile(cfg, []byte(boxConfig(bdir, resident)), 0o644); err != nil {
		return nil, err
	}
	b := &box{name: name}
	b.cmd = exec.Command(qm, "serve", "-c", cfg)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	b.cmd.Stdout = io.Discard
	if err := b.cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.log.WriteString(line + "\n")
			b.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case u := <-found:
		b.url = strings.TrimSuffix(u, "/")
		pu, err := url.Parse(b.url)
		if err != nil {
			return b, err
		}
		b.port, err = strconv.Atoi(pu.Port())
		return b, err
	case <-time.After(15 * time.Second):
		return b, fmt.Errorf("%s did not start:\n%s", name, b.logText())
	}
}

func (b *box) logText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

// stop sends SIGTERM (qm stops its models), then kills the process group after 10 s.
func (b *box) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (b *box) request(method, path string) (*http.Response, error) {
	req, err := http.NewRequest(method, b.url+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("authorization", "Bearer "+apiKey)
	return http.DefaultClient.Do(req)
}

// state is the model's state as the box's /api/status shows it.
func (b *box) state(model string) (string, error) {
	res, err := b.request("GET", "/api/status")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var st struct {
		Models []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"models"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return "", err
	}
	for _, m := range st.Models {
		if m.ID == model {
			return m.State, nil
		}
	}
	return "", fmt.Errorf("%s: no model %s", b.name, model)
}

func (b *box) waitState(model, want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		s, err := b.state(model)
		if err == nil && s == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s is %q (%v), not %q after %s", b.name, model, s, err, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metrics is the box's /metrics as the picker fetches it: no key.
func (b *box) metrics() (string, error) {
	res, err := http.Get(b.url + "/metrics")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return "", fmt.Errorf("%s: GET /metrics answered %d", b.name, res.StatusCode)
	}
	return string(body), err
}

// chat sends what Envoy would forward to the endpoint the picker chose.
func chatAt(endpoint, model string, maxTokens int) (*http.Response, error) {
	body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hi"}]}`, model, maxTokens)
	req, err := http.NewRequest("POST", "http://"+endpoint+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("authorization", "Bearer "+apiKey)
	return http.DefaultClient.Do(req)
}
