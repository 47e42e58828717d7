package modaltest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// unary and stream check every call's auth metadata, count it, and fail
// the test on a call the fake does not implement.
func (f *Fake) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := f.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	f.after(info.FullMethod, err)
	return resp, err
}

func (f *Fake) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := f.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	err := handler(srv, ss)
	f.after(info.FullMethod, err)
	return err
}

func (f *Fake) after(method string, err error) {
	name := path.Base(method)
	f.mu.Lock()
	f.calls[name]++
	f.mu.Unlock()
	if status.Code(err) == codes.Unimplemented {
		f.t.Errorf("modaltest: the SDK called %s, which the fake does not implement", method)
	}
}

// authorize checks the metadata the SDK sends: on the control plane the
// token pair, the client type and (except on AuthTokenGet itself) the JWT
// AuthTokenGet returned; on the command router the router JWT as a Bearer
// token, and nothing else.
func (f *Fake) authorize(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if strings.HasPrefix(method, "/"+pb.TaskCommandRouter_ServiceDesc.ServiceName+"/") {
		if get("authorization") != "Bearer "+f.routerJWT {
			return status.Error(codes.Unauthenticated, "modaltest: bad or missing router token")
		}
		return nil
	}
	if get("x-modal-token-id") != f.TokenID || get("x-modal-token-secret") != f.TokenSecret {
		return status.Error(codes.Unauthenticated, "modaltest: unknown token")
	}
	if get("x-modal-client-type") == "" || get("x-modal-client-version") == "" {
		return status.Error(codes.InvalidArgument, "modaltest: no client type or version")
	}
	if path.Base(method) != "AuthTokenGet" && get("x-modal-auth-token") != f.authJWT {
		return status.Error(codes.Unauthenticated, "modaltest: bad or missing auth token")
	}
	return nil
}

// jwt returns a token the SDK can parse: three parts, the second a JSON
// payload with an expiry an hour away. The fake does not sign it.
func jwt() string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"exp":%d,"jti":"%s"}`, time.Now().Add(time.Hour).Unix(), randomID())
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("fake"))
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
