package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsCluster runs n nats-server nodes in-process (JetStream on file stores, routes on loopback
// ports) until the test ends, and returns a connection to the first once the cluster can place a
// stream of n replicas.
func natsCluster(t *testing.T, n int) *nats.Conn {
	t.Helper()
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	nodes := make([]*server.Server, n)
	for i := range n {
		var err error
		nodes[i], err = server.NewServer(&server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1",
			Port: server.RANDOM_PORT, NoSigs: true, NoLog: true, JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: "volley-test", Host: "127.0.0.1", Port: ports[i]}, Routes: routes})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i].Start()
		t.Cleanup(func() { nodes[i].Shutdown(); nodes[i].WaitForShutdown() })
	}
	for _, s := range nodes {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats-server not ready")
		}
	}
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	// Ready: a stream of n replicas can be placed (the meta leader is elected, every peer known).
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := js.AddStream(&nats.StreamConfig{Name: "PROBE", Subjects: []string{"probe"}, Replicas: n, Storage: nats.MemoryStorage})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %d-node cluster never placed a stream of %d replicas: %v", n, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := js.DeleteStream("PROBE"); err != nil {
		t.Fatal(err)
	}
	return nc
}

// On a NATS cluster the snapshot stream gets 3 replicas by default; a cluster that cannot place
// 3 (two nodes) gets 1 with a warning, not a failed coordinator, unless 3 were asked for.
func TestStreamReplicasOnACluster(t *testing.T) {
	for _, tc := range []struct {
		nodes, want int
		warned      int
	}{{3, 3, 0}, {2, 1, 1}} {
		t.Run(fmt.Sprint(tc.nodes, " nodes"), func(t *testing.T) {
			nc := natsCluster(t, tc.nodes)
			if nc.ConnectedClusterName() != "volley-test" {
				t.Fatalf("cluster name %q", nc.ConnectedClusterName())
			}
			reg, err := Start(nc, "1.2.3", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(reg.Stop)
			logs := &recLog{}
			co, err := NewCoordinator(nc, reg, slog.New(logs), FileStore(true))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(co.Close)
			info, err := co.js.StreamInfo(SnapshotStream)
			if err != nil || info.Config.Replicas != tc.want || info.Config.Storage != nats.FileStorage {
				t.Fatalf("%v %+v", err, info)
			}
			if n := logs.count("the NATS cluster cannot place 3 replicas of the snapshot stream; keeping 1 (a lost server loses the snapshots a controller restart would replay)"); n != tc.warned {
				t.Fatalf("warned %d times", n)
			}
			if tc.want == 1 {
				if _, err := NewCoordinator(nc, reg, slog.New(logs), FileStore(true), StreamReplicas(3)); err == nil {
					t.Fatal("3 replicas asked for on 2 nodes")
				}
			}
		})
	}
}
