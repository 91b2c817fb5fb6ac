package main

// The steps: what nats.go's APIs return against one server, as a masked
// transcript. Every step has a timeout; an error is recorded (its type, its
// text, an API error's codes) and the check carries on.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

const stepTimeout = 10 * time.Second

var maskKeys = map[string]bool{
	"created": true, "ts": true, "time": true, "first_ts": true, "last_ts": true, "last_active": true,
	"mtime": true, "server_id": true, "server_name": true, "version": true, "go": true, "leader": true,
	"nuid": true, "client_ip": true, "host": true, "port": true, "nonce": true, "pause_remaining": true,
	"id": true, "started": true, "processing_time": true, "average_processing_time": true, "name_server": true,
	"_nats.ver": true,
}

var (
	rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`)
	inbox   = regexp.MustCompile(`_INBOX\.[A-Za-z0-9.]+`)
	objNuid = regexp.MustCompile(`(\$O\.[^.]+\.[CM]\.)[A-Za-z0-9_=-]{10,}`)
	ordered = regexp.MustCompile(`^[A-Za-z0-9]{22}_\d+$`) // an ordered consumer's name: nuid_n
)

func norm(v any, key string) any {
	if key != "" && maskKeys[key] && v != nil {
		return "<masked>"
	}
	switch x := v.(type) {
	case map[string]any:
		r := map[string]any{}
		for k, val := range x {
			r[k] = norm(val, k)
		}
		return r
	case []any:
		for i := range x {
			x[i] = norm(x[i], "")
		}
		return x
	case string:
		if rfc3339.MatchString(x) {
			return "<rfc3339>"
		}
		if ordered.MatchString(x) {
			return "<ordered-consumer>"
		}
		x = inbox.ReplaceAllString(x, "_INBOX.<x>")
		return objNuid.ReplaceAllString(x, "$1<nuid>")
	}
	return v
}

type transcript struct {
	mu    sync.Mutex
	lines []string
}

func (t *transcript) emit(step string, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"unmarshalable": err.Error()})
	}
	var generic any
	json.Unmarshal(raw, &generic)
	out, _ := json.Marshal(norm(generic, "")) // map keys come out sorted
	t.mu.Lock()
	t.lines = append(t.lines, step+"\t"+string(out))
	t.mu.Unlock()
}

func errInfo(err error) map[string]any {
	r := map[string]any{"type": fmt.Sprintf("%T", err), "message": inbox.ReplaceAllString(err.Error(), "_INBOX.<x>")}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		r["api"] = map[string]any{"code": api.Code, "err_code": api.ErrorCode, "description": api.Description}
	}
	for _, known := range []error{nats.ErrNoResponders, nats.ErrTimeout, jetstream.ErrKeyNotFound, jetstream.ErrKeyExists,
		jetstream.ErrMsgNotFound, jetstream.ErrObjectNotFound, jetstream.ErrNoMessages, jetstream.ErrStreamNotFound,
		jetstream.ErrConsumerNotFound, jetstream.ErrBucketNotFound, context.DeadlineExceeded} {
		if errors.Is(err, known) {
			r["is"] = known.Error()
			break
		}
	}
	return r
}

// step runs fn with a context that times out; its value (or error) is the step's line
func (t *transcript) step(name string, fn func(ctx context.Context) (any, error)) any {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.emit(name, map[string]any{"error": errInfo(r.err)})
			return nil
		}
		if r.v == nil {
			r.v = "ok"
		}
		t.emit(name, r.v)
		return r.v
	case <-time.After(stepTimeout + 2*time.Second):
		t.emit(name, map[string]any{"timeout": stepTimeout.String()})
		return nil
	}
}

func msgView(m *nats.Msg) map[string]any {
	return map[string]any{"subject": m.Subject, "data": string(m.Data), "header": m.Header, "has_reply": m.Reply != ""}
}

func jsMsgView(m jetstream.Msg) map[string]any {
	md, err := m.Metadata()
	v := map[string]any{"subject": m.Subject(), "data": string(m.Data()), "header": m.Headers()}
	if err == nil {
		v["meta"] = map[string]any{"stream": md.Stream, "consumer": md.Consumer, "stream_seq": md.Sequence.Stream,
			"consumer_seq": md.Sequence.Consumer, "delivered": md.NumDelivered, "pending": md.NumPending}
	}
	return v
}

func counters(ci *jetstream.ConsumerInfo) map[string]any {
	return map[string]any{"delivered": ci.Delivered.Stream, "delivered_cons": ci.Delivered.Consumer,
		"ack_floor": ci.AckFloor.Stream, "ack_pending": ci.NumAckPending, "redelivered": ci.NumRedelivered,
		"waiting": ci.NumWaiting, "pending": ci.NumPending}
}

func runCheck(url string) []string {
	t := &transcript{}
	nc, err := nats.Connect(url, nats.Name("natslab-interop-go"), nats.MaxReconnects(0), nats.Timeout(3*time.Second))
	if err != nil {
		t.emit("connect", map[string]any{"error": errInfo(err)})
		return t.lines
	}
	defer nc.Close()
	nc2, _ := nats.Connect(url, nats.MaxReconnects(0))
	defer nc2.Close()

	// ------------------------------------------------------------ core
	t.step("core.connect", func(ctx context.Context) (any, error) {
		cid, err := nc.GetClientID()
		cid2, _ := nc2.GetClientID()
		// the runner's readiness probe was client 5: these are 6 and 7 on both
		return map[string]any{"client_id": cid, "client_id_2": cid2, "headers": nc.HeadersSupported(), "max_payload": nc.MaxPayload(),
			"version": nc.ConnectedServerVersion(), "status": nc.Status().String()}, err
	})
	t.step("core.pubsub", func(ctx context.Context) (any, error) {
		sub, err := nc2.SubscribeSync("core.>")
		if err != nil {
			return nil, err
		}
		defer sub.Unsubscribe()
		nc2.Flush()
		for _, s := range []string{"core.a", "core.b.c", "other"} {
			nc.Publish(s, []byte("to "+s))
		}
		h := nats.Msg{Subject: "core.h", Data: []byte("with headers"), Header: nats.Header{"A": []string{"1", "2"}, "B": []string{"x"}}}
		nc.PublishMsg(&h)
		nc.Flush()
		var got []any
		for i := 0; i < 3; i++ {
			m, err := sub.NextMsg(2 * time.Second)
			if err != nil {
				return got, err
			}
			got = append(got, msgView(m))
		}
		_, err = sub.NextMsg(100 * time.Millisecond)
		return map[string]any{"got": got, "then": errInfo(err)}, nil
	})
	t.step("core.queue", func(ctx context.Context) (any, error) {
		counts := make([]int, 3)
		var mu sync.Mutex
		var subs []*nats.Subscription
		for i := range counts {
			i := i
			s, _ := nc2.QueueSubscribe("q.work", "workers", func(m *nats.Msg) { mu.Lock(); counts[i]++; mu.Unlock() })
			subs = append(subs, s)
		}
		nc2.Flush()
		for i := 0; i < 30; i++ {
			nc.Publish("q.work", []byte("job"))
		}
		nc.Flush()
		time.Sleep(200 * time.Millisecond)
		for _, s := range subs {
			s.Unsubscribe()
		}
		mu.Lock()
		defer mu.Unlock()
		total, used := 0, 0
		for _, c := range counts {
			total += c
			if c > 0 {
				used++
			}
		}
		return map[string]any{"total": total, "each_once": total == 30}, nil
	})
	t.step("core.request", func(ctx context.Context) (any, error) {
		s, _ := nc2.Subscribe("svc.upper", func(m *nats.Msg) { m.Respond([]byte(strings.ToUpper(string(m.Data)))) })
		defer s.Unsubscribe()
		nc2.Flush()
		m, err := nc.RequestWithContext(ctx, "svc.upper", []byte("shipped order 4711"))
		if err != nil {
			return nil, err
		}
		return msgView(m), nil
	})
	t.step("core.no_responders", func(ctx context.Context) (any, error) {
		_, err := nc.Request("nobody.home", []byte("?"), time.Second)
		return map[string]any{"error": errInfo(err)}, nil
	})
	t.step("core.bad_subject", func(ctx context.Context) (any, error) {
		return map[string]any{"error": errInfo(nc.Publish("bad subject", nil))}, nil
	})

	// ------------------------------------------------------------ streams
	js, err := jetstream.New(nc)
	if err != nil {
		t.emit("jetstream.new", map[string]any{"error": errInfo(err)})
		return t.lines
	}
	t.step("js.account_info.empty", func(ctx context.Context) (any, error) { return js.AccountInfo(ctx) })
	t.step("js.stream.create", func(ctx context.Context) (any, error) {
		s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, MaxMsgs: 1000,
			MaxAge: 24 * time.Hour, MaxMsgsPerSubject: 100, Duplicates: 2 * time.Minute, AllowDirect: true})
		if err != nil {
			return nil, err
		}
		return s.CachedInfo(), nil
	})
	t.step("js.stream.create.again_different", func(ctx context.Context) (any, error) {
		return js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"other.>"}})
	})
	t.step("js.stream.create.bad_name", func(ctx context.Context) (any, error) {
		return js.CreateStream(ctx, jetstream.StreamConfig{Name: "A.B", Subjects: []string{"ab"}})
	})
	for i, s := range []string{"orders.new", "orders.new", "orders.new", "orders.eu"} {
		i, s := i, s
		t.step(fmt.Sprintf("js.publish.%d", i+1), func(ctx context.Context) (any, error) {
			return js.Publish(ctx, s, []byte(fmt.Sprintf("order-%d payload", i+1)))
		})
	}
	t.step("js.publish.msgid", func(ctx context.Context) (any, error) {
		a, err := js.Publish(ctx, "orders.new", []byte("once"), jetstream.WithMsgID("id-1"))
		if err != nil {
			return nil, err
		}
		b, err := js.Publish(ctx, "orders.new", []byte("once"), jetstream.WithMsgID("id-1"))
		return []any{a, b}, err
	})
	t.step("js.publish.expect_last_seq_wrong", func(ctx context.Context) (any, error) {
		return js.Publish(ctx, "orders.new", []byte("x"), jetstream.WithExpectLastSequence(1))
	})
	t.step("js.publish.expect_stream_wrong", func(ctx context.Context) (any, error) {
		return js.Publish(ctx, "orders.new", []byte("x"), jetstream.WithExpectStream("OTHER"))
	})
	t.step("js.publish.expect_last_msgid", func(ctx context.Context) (any, error) {
		return js.Publish(ctx, "orders.eu", []byte("after id-1"), jetstream.WithExpectLastMsgID("id-1"))
	})
	t.step("js.publish.no_stream", func(ctx context.Context) (any, error) {
		return js.Publish(ctx, "nowhere", []byte("x"))
	})
	t.step("js.publish_async", func(ctx context.Context) (any, error) {
		var futs []jetstream.PubAckFuture
		for i := 0; i < 20; i++ {
			f, err := js.PublishAsync("orders.async", []byte(fmt.Sprintf("a%d", i)))
			if err != nil {
				return nil, err
			}
			futs = append(futs, f)
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var seqs []uint64
		for _, f := range futs {
			select {
			case a := <-f.Ok():
				seqs = append(seqs, a.Sequence)
			case e := <-f.Err():
				return nil, e
			}
		}
		return seqs, nil
	})
	t.step("js.stream.info", func(ctx context.Context) (any, error) {
		s, err := js.Stream(ctx, "ORDERS")
		if err != nil {
			return nil, err
		}
		return s.Info(ctx, jetstream.WithSubjectFilter(">"))
	})
	t.step("js.stream.update", func(ctx context.Context) (any, error) {
		return js.UpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, MaxMsgs: 500,
			MaxAge: 24 * time.Hour, MaxMsgsPerSubject: 100, Duplicates: 2 * time.Minute, AllowDirect: true, Description: "updated"})
	})
	t.step("js.stream.update.storage", func(ctx context.Context) (any, error) {
		return js.UpdateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	})
	t.step("js.stream.names", func(ctx context.Context) (any, error) {
		var names []string
		l := js.StreamNames(ctx)
		for n := range l.Name() {
			names = append(names, n)
		}
		return names, l.Err()
	})
	t.step("js.stream.by_subject", func(ctx context.Context) (any, error) { return js.StreamNameBySubject(ctx, "orders.x") })
	t.step("js.stream.by_subject.none", func(ctx context.Context) (any, error) { return js.StreamNameBySubject(ctx, "zzz") })
	orders, _ := js.Stream(context.Background(), "ORDERS")
	if orders == nil {
		return t.lines
	}
	t.step("js.msg.get", func(ctx context.Context) (any, error) { return orders.GetMsg(ctx, 2) })
	t.step("js.msg.get.last_for", func(ctx context.Context) (any, error) { return orders.GetLastMsgForSubject(ctx, "orders.eu") })
	t.step("js.msg.get.next_by_subject", func(ctx context.Context) (any, error) {
		return orders.GetMsg(ctx, 1, jetstream.WithGetMsgSubject("orders.eu"))
	})
	t.step("js.msg.get.missing", func(ctx context.Context) (any, error) { return orders.GetMsg(ctx, 9999) })
	t.step("js.msg.delete", func(ctx context.Context) (any, error) { return nil, orders.DeleteMsg(ctx, 3) })
	t.step("js.msg.delete.again", func(ctx context.Context) (any, error) { return nil, orders.DeleteMsg(ctx, 3) })
	t.step("js.msg.delete.beyond", func(ctx context.Context) (any, error) { return nil, orders.SecureDeleteMsg(ctx, 9999) })
	t.step("js.account_info.after_deletes", func(ctx context.Context) (any, error) {
		ai, err := js.AccountInfo(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"api": ai.API, "streams": ai.Streams, "consumers": ai.Consumers, "store": ai.Store, "memory": ai.Memory}, nil
	})
	t.step("js.stream.purge.subject", func(ctx context.Context) (any, error) {
		if err := orders.Purge(ctx, jetstream.WithPurgeSubject("orders.async")); err != nil {
			return nil, err
		}
		return orders.Info(ctx)
	})
	t.step("js.stream.purge.keep", func(ctx context.Context) (any, error) {
		if err := orders.Purge(ctx, jetstream.WithPurgeKeep(3)); err != nil {
			return nil, err
		}
		i, err := orders.Info(ctx, jetstream.WithDeletedDetails(true))
		if err != nil {
			return nil, err
		}
		return i.State, nil
	})
	for i := 0; i < 4; i++ {
		js.Publish(context.Background(), "orders.more", []byte(fmt.Sprintf("more-%d", i)))
	}

	// ------------------------------------------------------------ consumers
	t.step("js.consumer.create.pull", func(ctx context.Context) (any, error) {
		return js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "WORKER", AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: time.Second, MaxDeliver: 3})
	})
	worker, _ := js.Consumer(context.Background(), "ORDERS", "WORKER")
	if worker == nil {
		return t.lines
	}
	t.step("js.consumer.fetch", func(ctx context.Context) (any, error) {
		b, err := worker.Fetch(3, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		var got []any
		for m := range b.Messages() {
			got = append(got, jsMsgView(m))
			m.Ack()
		}
		return got, b.Error()
	})
	t.step("js.consumer.next.nak", func(ctx context.Context) (any, error) {
		m, err := worker.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		v := jsMsgView(m)
		err = m.Nak()
		// nats-server hands acks to its consumer's own goroutine: a pull sent
		// right after a nak can overtake it, so give the nak a moment
		time.Sleep(100 * time.Millisecond)
		return v, err
	})
	t.step("js.consumer.next.after_nak", func(ctx context.Context) (any, error) {
		m, err := worker.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		return jsMsgView(m), m.DoubleAck(ctx)
	})
	t.step("js.consumer.next.no_ack", func(ctx context.Context) (any, error) {
		m, err := worker.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		return jsMsgView(m), m.InProgress()
	})
	t.step("js.consumer.info.ack_pending", func(ctx context.Context) (any, error) {
		ci, err := worker.Info(ctx)
		if err != nil {
			return nil, err
		}
		return counters(ci), nil
	})
	time.Sleep(1300 * time.Millisecond) // past the 1 s ack wait
	t.step("js.consumer.next.redelivered", func(ctx context.Context) (any, error) {
		m, err := worker.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		err = m.Term()
		time.Sleep(100 * time.Millisecond) // as after the nak: let the term land before the info
		return jsMsgView(m), err
	})
	t.step("js.consumer.info.after_term", func(ctx context.Context) (any, error) {
		ci, err := worker.Info(ctx)
		if err != nil {
			return nil, err
		}
		return counters(ci), nil
	})
	t.step("js.consumer.fetch_nowait", func(ctx context.Context) (any, error) {
		b, err := worker.FetchNoWait(10)
		if err != nil {
			return nil, err
		}
		var got []any
		for m := range b.Messages() {
			got = append(got, m.Subject()+" "+string(m.Data()))
			m.Ack()
		}
		return got, b.Error()
	})
	t.step("js.consumer.fetch_nowait.empty", func(ctx context.Context) (any, error) {
		b, err := worker.FetchNoWait(10)
		if err != nil {
			return nil, err
		}
		n := 0
		for range b.Messages() {
			n++
		}
		return map[string]any{"n": n, "err": fmt.Sprint(b.Error())}, nil
	})
	t.step("js.consumer.consume", func(ctx context.Context) (any, error) {
		js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "CONSUMER", AckPolicy: jetstream.AckExplicitPolicy,
			FilterSubject: "orders.more"})
		c, err := js.Consumer(ctx, "ORDERS", "CONSUMER")
		if err != nil {
			return nil, err
		}
		got := make(chan string, 10)
		cc, err := c.Consume(func(m jetstream.Msg) { got <- string(m.Data()); m.Ack() }, jetstream.PullMaxMessages(2))
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
		return collect(ctx, got, 4)
	})
	t.step("js.consumer.messages", func(ctx context.Context) (any, error) {
		c, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "ITER", AckPolicy: jetstream.AckNonePolicy,
			DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, FilterSubject: "orders.>"})
		if err != nil {
			return nil, err
		}
		it, err := c.Messages()
		if err != nil {
			return nil, err
		}
		defer it.Stop()
		var seen []string
		for len(seen) < 2 {
			m, err := it.Next()
			if err != nil {
				return seen, err
			}
			seen = append(seen, m.Subject()+" "+string(m.Data()))
		}
		return seen, nil
	})
	t.step("js.consumer.ordered", func(ctx context.Context) (any, error) {
		oc, err := js.OrderedConsumer(ctx, "ORDERS", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"orders.more"}})
		if err != nil {
			return nil, err
		}
		b, err := oc.Fetch(4, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		var got []any
		for m := range b.Messages() {
			md, _ := m.Metadata()
			got = append(got, map[string]any{"data": string(m.Data()), "stream_seq": md.Sequence.Stream, "consumer_seq": md.Sequence.Consumer})
		}
		return got, b.Error()
	})
	t.step("js.consumer.push", func(ctx context.Context) (any, error) {
		pc, err := js.CreateOrUpdatePushConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "PUSHER", DeliverSubject: "deliver.pusher",
			AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.more"})
		if err != nil {
			return nil, err
		}
		got := make(chan string, 10)
		cc, err := pc.Consume(func(m jetstream.Msg) { got <- string(m.Data()); m.Ack() })
		if err != nil {
			return nil, err
		}
		defer cc.Stop()
		return collect(ctx, got, 4)
	})
	t.step("js.consumer.pause", func(ctx context.Context) (any, error) {
		return js.PauseConsumer(ctx, "ORDERS", "WORKER", time.Now().Add(time.Hour))
	})
	t.step("js.consumer.info.paused", func(ctx context.Context) (any, error) {
		ci, err := worker.Info(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"paused": ci.Paused, "level": ci.Config.Metadata["_nats.req.level"]}, nil
	})
	t.step("js.consumer.resume", func(ctx context.Context) (any, error) { return js.ResumeConsumer(ctx, "ORDERS", "WORKER") })
	t.step("js.consumer.names", func(ctx context.Context) (any, error) {
		var names []string
		l := orders.ConsumerNames(ctx)
		for n := range l.Name() {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, l.Err()
	})
	t.step("js.consumer.update.bad", func(ctx context.Context) (any, error) {
		return js.UpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "WORKER", AckPolicy: jetstream.AckNonePolicy})
	})
	t.step("js.consumer.delete", func(ctx context.Context) (any, error) { return nil, js.DeleteConsumer(ctx, "ORDERS", "CONSUMER") })
	t.step("js.consumer.delete.missing", func(ctx context.Context) (any, error) { return nil, js.DeleteConsumer(ctx, "ORDERS", "CONSUMER") })
	t.step("js.consumer.missing", func(ctx context.Context) (any, error) { return js.Consumer(ctx, "ORDERS", "NOPE") })

	// ------------------------------------------------------------ retention
	t.step("js.retention.interest", func(ctx context.Context) (any, error) {
		s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Retention: jetstream.InterestPolicy})
		if err != nil {
			return nil, err
		}
		js.Publish(ctx, "events.a", []byte("dropped"))
		js.Publish(ctx, "events.a", []byte("dropped"))
		before, _ := s.Info(ctx)
		c, _ := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "LIVE", AckPolicy: jetstream.AckExplicitPolicy})
		js.Publish(ctx, "events.a", []byte("kept"))
		kept, _ := s.Info(ctx)
		m, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		m.DoubleAck(ctx)
		after, _ := s.Info(ctx)
		return []any{before.State, kept.State.Msgs, after.State.Msgs}, nil
	})
	t.step("js.retention.workqueue", func(ctx context.Context) (any, error) {
		s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.MemoryStorage})
		if err != nil {
			return nil, err
		}
		c, _ := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "WQ", AckPolicy: jetstream.AckExplicitPolicy})
		_, err2 := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "WQ2", AckPolicy: jetstream.AckExplicitPolicy})
		js.Publish(ctx, "jobs.a", []byte("job-1"))
		js.Publish(ctx, "jobs.b", []byte("job-2"))
		m, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return nil, err
		}
		m.DoubleAck(ctx)
		i, _ := s.Info(ctx)
		return map[string]any{"second_consumer": errInfo(err2), "state": i.State}, nil
	})

	// ------------------------------------------------------------ KV
	t.step("kv.create", func(ctx context.Context) (any, error) {
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "CONFIG", History: 5})
		if err != nil {
			return nil, err
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"bucket": st.Bucket(), "history": st.History(), "values": st.Values(), "backing": st.BackingStore(),
			"bytes": st.Bytes(), "compressed": st.IsCompressed()}, nil
	})
	kv, _ := js.KeyValue(context.Background(), "CONFIG")
	if kv == nil {
		return t.lines
	}
	watchCtx, stopWatch := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopWatch()
	watcher, werr := kv.WatchAll(watchCtx)
	var watched []string
	var watchMu sync.Mutex
	watchDone := make(chan struct{})
	if werr == nil {
		go func() {
			defer close(watchDone)
			for e := range watcher.Updates() {
				watchMu.Lock()
				if e == nil {
					watched = append(watched, "<initial done>")
				} else {
					watched = append(watched, fmt.Sprintf("%s %s=%s r%d d%d", e.Operation(), e.Key(), e.Value(), e.Revision(), e.Delta()))
				}
				watchMu.Unlock()
			}
		}()
	} else {
		close(watchDone)
		t.emit("kv.watch.start", map[string]any{"error": errInfo(werr)})
	}
	// Each write waits until the watcher has it before the next is made:
	// nats-server delivers to the watcher from the consumer's goroutine, so a
	// write right behind another can be stored before the first is delivered,
	// and that delivery's Delta (its num_pending) is then 1, not 0.
	writes := 0
	watchSaw := func(err error) {
		if err != nil || werr != nil {
			return
		}
		writes++
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			watchMu.Lock()
			n := len(watched)
			watchMu.Unlock()
			if n >= writes+1 { // and the <initial done> marker
				return
			}
		}
	}
	t.step("kv.put", func(ctx context.Context) (any, error) {
		var revs []uint64
		for _, v := range []string{"eu", "us"} {
			r, err := kv.PutString(ctx, "region", v)
			if err != nil {
				return revs, err
			}
			watchSaw(nil)
			revs = append(revs, r)
		}
		return revs, nil
	})
	t.step("kv.get", func(ctx context.Context) (any, error) {
		e, err := kv.Get(ctx, "region")
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": e.Key(), "value": string(e.Value()), "rev": e.Revision(), "op": e.Operation().String()}, nil
	})
	t.step("kv.get.revision", func(ctx context.Context) (any, error) {
		e, err := kv.GetRevision(ctx, "region", 1)
		if err != nil {
			return nil, err
		}
		return string(e.Value()), nil
	})
	t.step("kv.get.missing", func(ctx context.Context) (any, error) { return kv.Get(ctx, "nope") })
	t.step("kv.create.exists", func(ctx context.Context) (any, error) { return kv.Create(ctx, "region", []byte("x")) })
	t.step("kv.create.new", func(ctx context.Context) (any, error) {
		r, err := kv.Create(ctx, "zone", []byte("a"))
		watchSaw(err)
		return r, err
	})
	t.step("kv.update.wrong_rev", func(ctx context.Context) (any, error) { return kv.Update(ctx, "zone", []byte("b"), 1) })
	t.step("kv.update.right_rev", func(ctx context.Context) (any, error) {
		r, err := kv.Update(ctx, "zone", []byte("b"), 3)
		watchSaw(err)
		return r, err
	})
	t.step("kv.delete", func(ctx context.Context) (any, error) {
		err := kv.Delete(ctx, "zone")
		watchSaw(err)
		return nil, err
	})
	t.step("kv.get.deleted", func(ctx context.Context) (any, error) { return kv.Get(ctx, "zone") })
	t.step("kv.create.after_delete", func(ctx context.Context) (any, error) {
		r, err := kv.Create(ctx, "zone", []byte("c"))
		watchSaw(err)
		return r, err
	})
	t.step("kv.keys", func(ctx context.Context) (any, error) {
		k, err := kv.Keys(ctx)
		sort.Strings(k)
		return k, err
	})
	t.step("kv.history", func(ctx context.Context) (any, error) {
		h, err := kv.History(ctx, "zone")
		var out []string
		for _, e := range h {
			out = append(out, fmt.Sprintf("%s %s r%d", e.Operation(), e.Value(), e.Revision()))
		}
		return out, err
	})
	t.step("kv.purge", func(ctx context.Context) (any, error) {
		err := kv.Purge(ctx, "region")
		watchSaw(err)
		return nil, err
	})
	t.step("kv.history.purged", func(ctx context.Context) (any, error) {
		h, err := kv.History(ctx, "region")
		var out []string
		for _, e := range h {
			out = append(out, fmt.Sprintf("%s r%d", e.Operation(), e.Revision()))
		}
		return out, err
	})
	t.step("kv.watch", func(ctx context.Context) (any, error) {
		time.Sleep(200 * time.Millisecond)
		if werr != nil {
			return nil, werr
		}
		watcher.Stop()
		stopWatch()
		<-watchDone
		watchMu.Lock()
		defer watchMu.Unlock()
		return watched, nil
	})
	t.step("kv.names", func(ctx context.Context) (any, error) {
		var names []string
		l := js.KeyValueStoreNames(ctx)
		for n := range l.Name() {
			names = append(names, n)
		}
		return names, l.Error()
	})
	t.step("kv.status", func(ctx context.Context) (any, error) {
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"values": st.Values(), "bytes": st.Bytes()}, nil
	})

	// ------------------------------------------------------------ object store
	blob := make([]byte, 1<<20+12345)
	for i := range blob {
		blob[i] = byte(i * 7 % 251)
	}
	t.step("obj.create", func(ctx context.Context) (any, error) {
		o, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "FILES", Description: "files"})
		if err != nil {
			return nil, err
		}
		st, err := o.Status(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"bucket": st.Bucket(), "description": st.Description(), "sealed": st.Sealed(), "size": st.Size()}, nil
	})
	obj, _ := js.ObjectStore(context.Background(), "FILES")
	if obj == nil {
		return t.lines
	}
	t.step("obj.put", func(ctx context.Context) (any, error) { return obj.PutBytes(ctx, "blob.bin", blob) })
	t.step("obj.put_string", func(ctx context.Context) (any, error) { return obj.PutString(ctx, "note.txt", "hello objects") })
	t.step("obj.get", func(ctx context.Context) (any, error) {
		b, err := obj.GetBytes(ctx, "blob.bin")
		if err != nil {
			return nil, err
		}
		return map[string]any{"len": len(b), "sha256": fmt.Sprintf("%x", sha256.Sum256(b)), "same": string(b) == string(blob)}, nil
	})
	t.step("obj.info", func(ctx context.Context) (any, error) { return obj.GetInfo(ctx, "blob.bin") })
	t.step("obj.link", func(ctx context.Context) (any, error) {
		info, err := obj.GetInfo(ctx, "note.txt")
		if err != nil {
			return nil, err
		}
		if _, err := obj.AddLink(ctx, "link.txt", info); err != nil {
			return nil, err
		}
		return obj.GetString(ctx, "link.txt")
	})
	t.step("obj.list", func(ctx context.Context) (any, error) {
		l, err := obj.List(ctx)
		var names []string
		for _, o := range l {
			names = append(names, fmt.Sprintf("%s %d %d", o.Name, o.Size, o.Chunks))
		}
		sort.Strings(names)
		return names, err
	})
	t.step("obj.delete", func(ctx context.Context) (any, error) { return nil, obj.Delete(ctx, "blob.bin") })
	t.step("obj.get.deleted", func(ctx context.Context) (any, error) { return obj.GetBytes(ctx, "blob.bin") })
	t.step("obj.status", func(ctx context.Context) (any, error) {
		st, err := obj.Status(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"size": st.Size(), "sealed": st.Sealed()}, nil
	})

	// ------------------------------------------------------------ micro
	t.step("micro.service", func(ctx context.Context) (any, error) {
		svc, err := micro.AddService(nc2, micro.Config{Name: "upper", Version: "1.0.0", Description: "upper-cases",
			Endpoint: &micro.EndpointConfig{Subject: "svc.micro.upper", Handler: micro.HandlerFunc(func(r micro.Request) {
				r.Respond([]byte(strings.ToUpper(string(r.Data()))))
			})}})
		if err != nil {
			return nil, err
		}
		defer svc.Stop()
		nc2.Flush()
		reply, err := nc.RequestWithContext(ctx, "svc.micro.upper", []byte("micro"))
		if err != nil {
			return nil, err
		}
		ping, err := nc.RequestWithContext(ctx, "$SRV.PING.upper", nil)
		if err != nil {
			return nil, err
		}
		info, err := nc.RequestWithContext(ctx, "$SRV.INFO.upper", nil)
		if err != nil {
			return nil, err
		}
		stats, err := nc.RequestWithContext(ctx, "$SRV.STATS.upper", nil)
		if err != nil {
			return nil, err
		}
		var p, i, s any
		json.Unmarshal(ping.Data, &p)
		json.Unmarshal(info.Data, &i)
		json.Unmarshal(stats.Data, &s)
		return map[string]any{"reply": string(reply.Data), "ping": p, "info": i, "stats": s}, nil
	})

	// ------------------------------------------------------------ the end
	t.step("js.account_info.end", func(ctx context.Context) (any, error) {
		ai, err := js.AccountInfo(ctx)
		if err != nil {
			return nil, err
		}
		// no api.errors here: whether the watcher's and ordered consumers'
		// clean-up calls fail varies from run to run on either server
		return map[string]any{"streams": ai.Streams, "consumers": ai.Consumers, "store": ai.Store, "memory": ai.Memory}, nil
	})
	t.step("js.stream.delete", func(ctx context.Context) (any, error) { return nil, js.DeleteStream(ctx, "EVENTS") })
	t.step("js.stream.delete.missing", func(ctx context.Context) (any, error) { return nil, js.DeleteStream(ctx, "EVENTS") })
	return t.lines
}

// collect takes n values from got, or what came before ctx ran out.
func collect(ctx context.Context, got <-chan string, n int) ([]string, error) {
	var seen []string
	for len(seen) < n {
		select {
		case s := <-got:
			seen = append(seen, s)
		case <-ctx.Done():
			return seen, ctx.Err()
		}
	}
	return seen, nil
}
