// Command picker runs the Gateway API Inference Extension's endpoint picker (EPP) over three
// `qm serve` processes and drives it through its ext_proc API in place of Envoy:
//
//   - qm's /metrics, read by the Prometheus text parser the picker uses, and by its extractor;
//   - each model (by id and by alias) goes to the box where it is resident, 8 times of 8, and
//     its chat, sent where the picker said, is served by a model already loaded there;
//   - the box holding a model keeps its requests while its queue is the deepest of the three;
//   - a model moved from one box to another is followed within 5 s.
//
// The picker runs unmodified in its standalone mode (--endpoint-selector), which lists Pods
// through a Kubernetes API server: apiserver.go stands in for one. run.sh builds both and
// runs this; the figures go to stdout and, as JSON, to -out.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func sortStrings(s []string) []string { sort.Strings(s); return s }

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type figures struct {
	PickerVersion string              `json:"picker_version"`
	Picks         map[string][]string `json:"picks"`
	PickMs        map[string]float64  `json:"pick_ms_median"`
	QueueDepths   map[string]int      `json:"queue_depths_when_deep"`
	DeepQueuePick []string            `json:"deep_queue_picks"`
	FollowMs      float64             `json:"moved_model_followed_ms"`
	FollowFromMs  float64             `json:"moved_model_followed_ms_from_load_request"`
	AfterMove     map[string][]string `json:"picks_after_move"`
	ParsedFamily  map[string][]string `json:"metrics_families_read"`
	Failures      []string            `json:"failures"`
	Extra         map[string]any      `json:"extra,omitempty"`
	Boxes         map[string]string   `json:"boxes"`
	byBox         map[string]string
}

func (f *figures) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	fmt.Println("FAIL:", msg)
	f.Failures = append(f.Failures, msg)
}

func main() {
	qm := flag.String("qm", "dist/qm", "the qm binary")
	epp := flag.String("epp", "", "the endpoint picker binary (cmd/epp)")
	eppConfig := flag.String("config", "scripts/picker/epp-config.yaml", "the picker's EndpointPickerConfig")
	version := flag.String("version", "", "the picker's module version, for the figures")
	out := flag.String("out", "", "a folder for the figures (JSON) and the logs")
	flag.Parse()
	if *epp == "" {
		fmt.Fprintln(os.Stderr, "-epp is required")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "qm-picker-")
	must(err)
	if *out == "" {
		*out = dir
	}
	must(os.MkdirAll(*out, 0o755))
	fmt.Println("logs and figures in", *out)

	var boxes []*box
	var eppCmd *exec.Cmd
	cleanup := func() {
		if eppCmd != nil && eppCmd.Process != nil {
			_ = syscall.Kill(-eppCmd.Process.Pid, syscall.SIGTERM)
			_ = eppCmd.Wait()
		}
		for _, b := range boxes {
			b.stop()
			_ = os.WriteFile(filepath.Join(*out, b.name+".log"), []byte(b.logText()), 0o644)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; cleanup(); os.Exit(130) }()

	code := run(*qm, *epp, *eppConfig, *version, dir, *out, &boxes, &eppCmd)
	cleanup()
	os.Exit(code)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(qm, epp, eppConfig, version, dir, out string, boxes *[]*box, eppCmd **exec.Cmd) int {
	f := &figures{PickerVersion: version, Picks: map[string][]string{}, PickMs: map[string]float64{},
		Failures: []string{}, AfterMove: map[string][]string{}, ParsedFamily: map[string][]string{}, Boxes: map[string]string{},
		byBox: map[string]string{}}
	defer func() {
		data, _ := json.MarshalIndent(f, "", "  ")
		_ = os.WriteFile(filepath.Join(out, "figures.json"), data, 0o644)
	}()

	// Three boxes, box-a holding alpha, box-b beta, box-c gamma.
	names := []string{"box-a", "box-b", "box-c"}
	ports := map[string]int{}
	for i, name := range names {
		b, err := startBox(qm, dir, name, models[i])
		if b != nil {
			*boxes = append(*boxes, b)
		}
		if err != nil {
			f.fail("%v", err)
			return 1
		}
		ports[name] = b.port
		f.Boxes[name] = b.url
		f.byBox[fmt.Sprintf("127.0.0.1:%d", b.port)] = name
	}
	for i, b := range *boxes {
		if err := b.waitState(models[i], "ready", 30*time.Second); err != nil {
			f.fail("%v", err)
			return 1
		}
	}
	resident := map[string]string{"alpha": "box-a", "beta": "box-b", "gamma": "box-c"}

	// qm's /metrics through the Prometheus text parser the picker uses (legacy name validation).
	for _, b := range *boxes {
		text, err := b.metrics()
		if err != nil {
			f.fail("%v", err)
			return 1
		}
		fams, err := parseText(text)
		if err != nil {
			f.fail("%s: the Prometheus text parser refused qm's /metrics: %v", b.name, err)
			continue
		}
		for _, name := range []string{"vllm:num_requests_waiting", "vllm:num_requests_running",
			"vllm:kv_cache_usage_perc", "vllm:lora_requests_info"} {
			fam, ok := fams[name]
			switch {
			case !ok:
				f.fail("%s: no %s", b.name, name)
			case fam.GetType() != dto.MetricType_GAUGE:
				f.fail("%s: %s is a %s, not a gauge", b.name, name, fam.GetType())
			case len(fam.GetMetric()) != 1:
				f.fail("%s: %s has %d series, not 1", b.name, name, len(fam.GetMetric()))
			default:
				var labels []string
				for _, l := range fam.GetMetric()[0].GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				f.ParsedFamily[b.name] = append(f.ParsedFamily[b.name],
					fmt.Sprintf("%s{%s} %g", name, strings.Join(labels, ","), fam.GetMetric()[0].GetGauge().GetValue()))
			}
		}
	}

	// The picker over a stand-in API server that lists an InferencePool and the boxes as Pods.
	api, err := startFakeAPIServer(ports, filepath.Join(out, "apiserver.log"))
	if err != nil {
		f.fail("%v", err)
		return 1
	}
	kubeconfig, err := api.kubeconfig(dir)
	if err != nil {
		f.fail("%v", err)
		return 1
	}
	grpcPort, healthPort, metricsPort := freePort(), freePort(), freePort()
	eppLog, err := os.Create(filepath.Join(out, "epp.log"))
	if err != nil {
		f.fail("%v", err)
		return 1
	}
	defer eppLog.Close()
	cmd := exec.Command(epp,
		"--config-file", eppConfig,
		"--pool-name", poolName,
		"--pool-namespace", podNamespace,
		"--grpc-port", fmt.Sprint(grpcPort),
		"--grpc-health-port", fmt.Sprint(healthPort),
		"--metrics-port", fmt.Sprint(metricsPort),
		"--secure-serving=false", "--tracing=false", "--metrics-endpoint-auth=false", "--enable-pprof=false",
		"--refresh-metrics-interval", "50ms",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"POD_NAME=qm-epp-7c9d8b6f5d-x2k4q", "NAMESPACE="+podNamespace)
	cmd.Stdout, cmd.Stderr = eppLog, eppLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.fail("starting the picker: %v", err)
		return 1
	}
	*eppCmd = cmd
	if err := waitServing(fmt.Sprintf("127.0.0.1:%d", healthPort), 30*time.Second); err != nil {
		f.fail("%v (epp.log)", err)
		return 1
	}
	p, err := dialPicker(fmt.Sprintf("127.0.0.1:%d", grpcPort))
	if err != nil {
		f.fail("%v", err)
		return 1
	}
	// Settle: the picker answers once it knows the three Pods; then 20 scrape intervals pass
	// before anything is counted, so every box has been scraped.
	settleStart := time.Now()
	for {
		if _, err := p.pick("gamma"); err == nil {
			break
		} else if time.Since(settleStart) > 20*time.Second {
			f.fail("the picker never picked: %v (epp.log)", err)
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("the picker picked %.0f ms after its health check passed; 1 s to settle\n",
		float64(time.Since(settleStart).Milliseconds()))
	time.Sleep(time.Second)

	pickOnce := func(name string) (string, time.Duration, error) {
		t0 := time.Now()
		ep, err := p.pick(name)
		return ep, time.Since(t0), err
	}

	// 1. Each model, by id and by alias, to its box 8 times of 8; each chat served loaded.
	fmt.Println("\n1. each model to the box where it is resident")
	for _, m := range models {
		for _, name := range []string{m, m + "-chat"} {
			var lat []time.Duration
			for i := 0; i < 8; i++ {
				ep, d, err := pickOnce(name)
				if err != nil {
					f.fail("pick %s: %v", name, err)
					return 1
				}
				lat = append(lat, d)
				f.Picks[name] = append(f.Picks[name], f.byBox[ep])
				res, err := chatAt(ep, name, 3)
				if err != nil {
					f.fail("chat %s at %s: %v", name, ep, err)
					continue
				}
				_ = res.Body.Close()
				if res.StatusCode != 200 || res.Header.Get("x-qm-model-loaded") != "true" {
					f.fail("chat %s at %s: %d, x-qm-model-loaded %q", name, ep, res.StatusCode, res.Header.Get("x-qm-model-loaded"))
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			f.PickMs[name] = float64(lat[len(lat)/2].Microseconds()) / 1000
			n := count(f.Picks[name], resident[m])
			fmt.Printf("   %-11s -> %s %d of 8 (pick median %.1f ms)\n", name, resident[m], n, f.PickMs[name])
			if n != 8 {
				f.fail("%s went to %s %d times of 8: %v", name, resident[m], n, f.Picks[name])
			}
		}
	}

	// 2. The resident box keeps alpha while its queue is the deepest.
	fmt.Println("\n2. the resident box keeps its model while its queue is the deepest")
	boxA := (*boxes)[0]
	pending := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			res, err := chatAt(fmt.Sprintf("127.0.0.1:%d", boxA.port), "alpha", 20)
			if err == nil {
				_ = res.Body.Close()
			}
			pending <- err
		}()
	}
	f.QueueDepths = map[string]int{}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if q := queueOf(boxA); q >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range *boxes {
		f.QueueDepths[b.name] = queueOf(b)
	}
	time.Sleep(200 * time.Millisecond) // four scrape intervals: the picker has seen the queue
	for i := 0; i < 8; i++ {
		ep, _, err := pickOnce("alpha")
		if err != nil {
			f.fail("pick alpha with a deep queue: %v", err)
			break
		}
		f.DeepQueuePick = append(f.DeepQueuePick, f.byBox[ep])
	}
	fmt.Printf("   queues %v; alpha -> box-a %d of 8\n", f.QueueDepths, count(f.DeepQueuePick, "box-a"))
	if f.QueueDepths["box-a"] < 2 {
		f.fail("box-a's queue never grew: %v", f.QueueDepths)
	}
	if count(f.DeepQueuePick, "box-a") != 8 {
		f.fail("alpha left box-a while its queue was deep: %v", f.DeepQueuePick)
	}
	for i := 0; i < 4; i++ {
		if err := <-pending; err != nil {
			f.fail("a queued alpha chat failed: %v", err)
		}
	}

	// 3. alpha moves from box-a to box-b (which swaps beta out): followed within 5 s.
	fmt.Println("\n3. a model moved from one box to another")
	boxB := (*boxes)[1]
	loadAt := time.Now()
	if res, err := boxA.request("POST", "/api/models/alpha/unload"); err != nil || res.StatusCode >= 300 {
		f.fail("unload alpha on box-a: %v %v", err, status(res))
		return 1
	}
	if res, err := boxB.request("POST", "/api/models/alpha/load"); err != nil || res.StatusCode >= 300 {
		f.fail("load alpha on box-b: %v %v", err, status(res))
		return 1
	}
	if err := boxB.waitState("alpha", "ready", 30*time.Second); err != nil {
		f.fail("%v", err)
		return 1
	}
	movedAt := time.Now()
	followed := false
	for time.Since(movedAt) < 5*time.Second {
		ep, _, err := pickOnce("alpha")
		if err == nil && f.byBox[ep] == "box-b" {
			f.FollowMs = float64(time.Since(movedAt).Microseconds()) / 1000
			f.FollowFromMs = float64(time.Since(loadAt).Microseconds()) / 1000
			followed = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !followed {
		f.fail("alpha was not followed to box-b within 5 s")
	} else {
		fmt.Printf("   alpha followed to box-b %.0f ms after it was ready there (%.0f ms after the unload request)\n",
			f.FollowMs, f.FollowFromMs)
	}
	for _, name := range []string{"alpha", "alpha-chat", "beta", "gamma"} {
		for i := 0; i < 8; i++ {
			ep, _, err := pickOnce(name)
			if err != nil {
				f.fail("pick %s after the move: %v", name, err)
				break
			}
			f.AfterMove[name] = append(f.AfterMove[name], f.byBox[ep])
		}
	}
	want := map[string]string{"alpha": "box-b", "alpha-chat": "box-b", "gamma": "box-c",
		// beta is resident nowhere now: the box with room (box-a holds nothing) gets it.
		"beta": "box-a"}
	for _, name := range []string{"alpha", "alpha-chat", "beta", "gamma"} {
		n := count(f.AfterMove[name], want[name])
		fmt.Printf("   %-11s -> %s %d of 8\n", name, want[name], n)
		if n != 8 {
			f.fail("after the move %s went to %s %d times of 8: %v", name, want[name], n, f.AfterMove[name])
		}
	}
	if res, err := chatAt(fmt.Sprintf("127.0.0.1:%d", boxB.port), "alpha", 3); err != nil ||
		res.Header.Get("x-qm-model-loaded") != "true" {
		f.fail("alpha on box-b after the move was not served loaded: %v", err)
	} else {
		_ = res.Body.Close()
	}

	if len(f.Failures) > 0 {
		fmt.Printf("\n%d failed\n", len(f.Failures))
		return 1
	}
	fmt.Println("\nall checks passed")
	return 0
}

func count(xs []string, want string) int {
	n := 0
	for _, x := range xs {
		if x == want {
			n++
		}
	}
	return n
}

func status(res *http.Response) string {
	if res == nil {
		return ""
	}
	_ = res.Body.Close()
	return res.Status
}

// queueOf is vllm:num_requests_waiting on the box's /metrics, -1 when unreadable.
func queueOf(b *box) int {
	text, err := b.metrics()
	if err != nil {
		return -1
	}
	fams, err := parseText(text)
	if err != nil {
		return -1
	}
	fam, ok := fams["vllm:num_requests_waiting"]
	if !ok || len(fam.GetMetric()) == 0 {
		return -1
	}
	return int(fam.GetMetric()[0].GetGauge().GetValue())
}

// parseText is the picker's own parse of a scrape (its metrics data source's parseMetrics).
func parseText(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}
