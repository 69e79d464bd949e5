package main

// The picker's ext_proc API driven as Envoy drives it: one stream per request, the request's
// headers, then its whole body (end of stream), and the picker's answer to the headers names
// the endpoint (the `x-gateway-destination-endpoint` header and the `envoy.lb` metadata).

import (
	"context"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extproc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type pickerClient struct {
	conn *grpc.ClientConn
	ext  extproc.ExternalProcessorClient
	n    int
}

func dialPicker(addr string) (*pickerClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &pickerClient{conn: conn, ext: extproc.NewExternalProcessorClient(conn)}, nil
}

// waitServing waits for the picker's health service (its own port) to answer SERVING: the
// picker reports it once its endpoints are known.
func waitServing(addr string, timeout time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	h := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ext_proc.v3.ExternalProcessor"})
		cancel()
		if err == nil && res.Status == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		last = fmt.Sprint(res.GetStatus(), err)
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("picker not serving after %s: %s", timeout, last)
}

// pick asks the picker where a chat for `model` goes and returns the endpoint (host:port).
func (p *pickerClient) pick(model string) (string, error) {
	p.n++
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := p.ext.Process(ctx)
	if err != nil {
		return "", err
	}
	body := []byte(fmt.Sprintf(`{"model":%q,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, model))
	hdr := func(k, v string) *corev3.HeaderValue { return &corev3.HeaderValue{Key: k, RawValue: []byte(v)} }
	err = stream.Send(&extproc.ProcessingRequest{Request: &extproc.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extproc.HttpHeaders{Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
			hdr(":method", "POST"), hdr(":path", "/v1/chat/completions"), hdr(":authority", "gateway"),
			hdr(":scheme", "http"), hdr("content-type", "application/json"),
			hdr("authorization", "Bearer "+apiKey), hdr("x-request-id", fmt.Sprintf("picker-run-%d", p.n)),
		}}},
	}})
	if err != nil {
		return "", err
	}
	err = stream.Send(&extproc.ProcessingRequest{Request: &extproc.ProcessingRequest_RequestBody{
		RequestBody: &extproc.HttpBody{Body: body, EndOfStream: true},
	}})
	if err != nil {
		return "", err
	}
	defer func() { _ = stream.CloseSend() }()
	for {
		res, err := stream.Recv()
		if err != nil {
			return "", err
		}
		if imm := res.GetImmediateResponse(); imm != nil {
			return "", fmt.Errorf("picker refused: %v %s", imm.GetStatus().GetCode(), imm.GetBody())
		}
		if h := res.GetRequestHeaders(); h != nil {
			var fromHeader string
			for _, o := range h.GetResponse().GetHeaderMutation().GetSetHeaders() {
				if o.GetHeader().GetKey() == "x-gateway-destination-endpoint" {
					fromHeader = string(o.GetHeader().GetRawValue())
				}
			}
			fromMeta := res.GetDynamicMetadata().GetFields()["envoy.lb"].GetStructValue().
				GetFields()["x-gateway-destination-endpoint"].GetStringValue()
			if fromHeader == "" || fromHeader != fromMeta {
				return "", fmt.Errorf("picker named %q in the header and %q in the metadata", fromHeader, fromMeta)
			}
			return fromHeader, nil
		}
	}
}
