package lease

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LoseNextAck makes l's publishes reach the server and then fail as if
// their acknowledgement were lost, until restore is called.
func LoseNextAck(l *Lease) (restore func()) {
	orig := l.js
	l.js = lostAck{orig}
	return func() { l.js = orig }
}

type lostAck struct{ jetstream.JetStream }

func (a lostAck) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if _, err := a.JetStream.PublishMsg(ctx, m, opts...); err != nil {
		return nil, err
	}
	return nil, errors.New("nats: timeout: the acknowledgement was lost")
}
