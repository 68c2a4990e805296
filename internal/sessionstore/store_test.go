package sessionstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/hermes-agent/hermes-wasm-exec/internal/sessionstore/s3test"
	"github.com/hermes-agent/hermes-wasm-exec/internal/testenv"
)

// testStore checks every method of the Store that open returns against
// the interface's contract. open is called once per subtest and must
// return an empty store of its own.
// keepsBases is false for a store whose PutBase keeps nothing (Memory:
// its images resume in the process that made them, on its snapshot).
func testStore(t *testing.T, open func(t *testing.T) Store, keepsBases ...bool) {
	bases := len(keepsBases) == 0 || keepsBases[0]
	t.Run("PutTake", func(t *testing.T) {
		st := open(t)
		_, err := st.Take("s", "k")
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, st.Put("s", "k", []byte("first")))
		require.NoError(t, st.Put("s", "k", []byte("second")), "a Put over a Put")
		// Kernel names are of any bytes.
		odd := "a/../b\x00é k"
		require.NoError(t, st.Put("s", odd, []byte("odd")))
		got, err := st.Take("s", "k")
		require.NoError(t, err)
		require.Equal(t, "second", string(got))
		_, err = st.Take("s", "k")
		require.ErrorIs(t, err, ErrNotFound, "Take removes the image")
		got, err = st.Take("s", odd)
		require.NoError(t, err)
		require.Equal(t, "odd", string(got))
		_, err = st.Take("other", "k")
		require.ErrorIs(t, err, ErrNotFound)
		// An empty image is an image.
		require.NoError(t, st.Put("s", "empty", nil))
		got, err = st.Take("s", "empty")
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("Delete", func(t *testing.T) {
		st := open(t)
		require.NoError(t, st.Put("s", "k1", []byte("1")))
		require.NoError(t, st.Put("s", "k2", []byte("2")))
		require.NoError(t, st.Put("keep", "k1", []byte("kept")))
		_, err := st.Acquire("s", "a", time.Now().Add(time.Hour), "")
		require.NoError(t, err)
		require.NoError(t, st.Delete("s"))
		for _, k := range []string{"k1", "k2"} {
			_, err := st.Take("s", k)
			require.ErrorIs(t, err, ErrNotFound, "Delete removes %s", k)
		}
		// The lease stays with its holder, who may be running the session.
		_, err = st.Acquire("s", "b", time.Now().Add(time.Hour), "")
		require.ErrorIs(t, err, ErrLeased, "Delete keeps the lease")
		require.NoError(t, st.Release("s", "a"))
		got, err := st.Take("keep", "k1")
		require.NoError(t, err, "Delete leaves other sessions")
		require.Equal(t, "kept", string(got))
		require.NoError(t, st.Delete("never"), "Delete of a session with nothing")
	})

	t.Run("Copy", func(t *testing.T) {
		st := open(t)
		n, err := st.Copy("none", "to")
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, st.Put("from", "k1", []byte("from1")))
		require.NoError(t, st.Put("from", "k2", []byte("from2")))
		require.NoError(t, st.Put("to", "k1", []byte("old")))
		require.NoError(t, st.Put("to", "k3", []byte("to3")))
		n, err = st.Copy("from", "to")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		for k, want := range map[string]string{"k1": "from1", "k2": "from2", "k3": "to3"} {
			got, err := st.Take("to", k)
			require.NoError(t, err, k)
			require.Equal(t, want, string(got), k)
		}
		for k, want := range map[string]string{"k1": "from1", "k2": "from2"} {
			got, err := st.Take("from", k)
			require.NoError(t, err, "Copy leaves the source's %s", k)
			require.Equal(t, want, string(got))
		}
	})

	t.Run("Handoff", func(t *testing.T) {
		st := open(t)
		asked, err := st.Asked("holder")
		require.NoError(t, err)
		require.Empty(t, asked)
		require.NoError(t, st.AskHandoff("holder", "s/1"))
		require.NoError(t, st.AskHandoff("holder", "s/1"), "asking again is asking once")
		require.NoError(t, st.AskHandoff("holder", "s2"))
		require.NoError(t, st.AskHandoff("other", "s3"))
		asked, err = st.Asked("holder")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"s/1", "s2"}, asked)
		asked, err = st.Asked("holder")
		require.NoError(t, err)
		require.Empty(t, asked, "Asked forgets what it returned")
		asked, err = st.Asked("other")
		require.NoError(t, err)
		require.Equal(t, []string{"s3"}, asked)
		images, _, err := st.Usage()
		require.NoError(t, err)
		require.Zero(t, images, "a request is no image")
	})

	t.Run("Base", func(t *testing.T) {
		if !bases {
			t.Skip("this store keeps no snapshot")
		}
		st := open(t)
		_, err := st.Base("sum")
		require.ErrorIs(t, err, ErrNotFound)
		require.NoError(t, st.PutBase("sum", []byte("snapshot")))
		require.NoError(t, st.PutBase("sum", []byte("another making")), "PutBase of a sum the store has")
		got, err := st.Base("sum")
		require.NoError(t, err)
		require.Equal(t, "snapshot", string(got), "PutBase keeps the snapshot the store has")
		require.NoError(t, st.PutBase("sum2", []byte("two")))
		got, err = st.Base("sum2")
		require.NoError(t, err)
		require.Equal(t, "two", string(got))
		images, _, err := st.Usage()
		require.NoError(t, err)
		require.Zero(t, images, "a snapshot is not an image")
	})

	t.Run("SessionBytes", func(t *testing.T) {
		st := open(t)
		n, err := st.SessionBytes("s", "k1")
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, st.Put("s", "k1", make([]byte, 10)))
		require.NoError(t, st.Put("s", "k2", make([]byte, 20)))
		require.NoError(t, st.Put("other", "k3", make([]byte, 40)))
		_, err = st.Acquire("s", "a", time.Now().Add(time.Hour), "")
		require.NoError(t, err)
		n, err = st.SessionBytes("s", "k1")
		require.NoError(t, err)
		require.EqualValues(t, 20, n, "the named kernel's image and the lease are not counted")
		n, err = st.SessionBytes("s", "none")
		require.NoError(t, err)
		require.EqualValues(t, 30, n)
	})

	t.Run("Acquire", func(t *testing.T) {
		st := open(t)
		hour := time.Now().Add(time.Hour)
		l, err := st.Acquire("s", "a", hour, "")
		require.NoError(t, err, "a free lease")
		requireLease(t, Lease{"a", hour}, l)

		twoHours := time.Now().Add(2 * time.Hour)
		l, err = st.Acquire("s", "a", twoHours, "")
		require.NoError(t, err, "renewed by its owner")
		requireLease(t, Lease{"a", twoHours}, l)

		l, err = st.Acquire("s", "b", hour, "")
		require.ErrorIs(t, err, ErrLeased, "held by another")
		requireLease(t, Lease{"a", twoHours}, l)
		require.ErrorContains(t, err, `"s"`)
		require.ErrorContains(t, err, "held by a")

		l, err = st.Acquire("s", "b", hour, "c")
		require.ErrorIs(t, err, ErrLeased, "replace names another owner")
		requireLease(t, Lease{"a", twoHours}, l)

		l, err = st.Acquire("s", "b", hour, "a")
		require.NoError(t, err, "taken from a holder known to be gone")
		requireLease(t, Lease{"b", hour}, l)
		_, err = st.Acquire("s", "a", hour, "")
		require.ErrorIs(t, err, ErrLeased, "the replaced holder lost it")

		past := time.Now().Add(-time.Second)
		_, err = st.Acquire("e", "a", past, "")
		require.NoError(t, err)
		l, err = st.Acquire("e", "b", hour, "")
		require.NoError(t, err, "taken after the holder's lease expired")
		requireLease(t, Lease{"b", hour}, l)
	})

	t.Run("AcquireRace", func(t *testing.T) {
		st := open(t)
		until := time.Now().Add(time.Hour)
		for round := range 8 {
			session := fmt.Sprintf("race%d", round)
			owners := []string{"x", "y", "z"}
			leases := make([]Lease, len(owners))
			errs := make([]error, len(owners))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, o := range owners {
				wg.Go(func() {
					<-start
					leases[i], errs[i] = st.Acquire(session, o, until, "")
				})
			}
			close(start)
			wg.Wait()
			winner := ""
			for i, err := range errs {
				if err == nil {
					require.Empty(t, winner, "round %d: %s and %s both acquired a free lease", round, winner, owners[i])
					winner = owners[i]
				}
			}
			require.NotEmpty(t, winner, "round %d: nobody acquired a free lease: %v", round, errs)
			for i, err := range errs {
				if owners[i] != winner {
					require.ErrorIs(t, err, ErrLeased, "round %d", round)
					require.Equal(t, winner, leases[i].Owner, "round %d: the loser is told the winner", round)
				}
			}
		}
	})

	t.Run("Release", func(t *testing.T) {
		st := open(t)
		require.NoError(t, st.Release("s", "a"), "Release of no lease")
		hour := time.Now().Add(time.Hour)
		_, err := st.Acquire("s", "a", hour, "")
		require.NoError(t, err)
		require.NoError(t, st.Release("s", "b"))
		l, err := st.Acquire("s", "b", hour, "")
		require.ErrorIs(t, err, ErrLeased, "Release by another owner leaves the lease")
		require.Equal(t, "a", l.Owner)
		require.NoError(t, st.Release("s", "a"))
		_, err = st.Acquire("s", "b", hour, "")
		require.NoError(t, err, "released by its owner")
	})

	t.Run("Sweep", func(t *testing.T) {
		st := open(t)
		require.NoError(t, st.Put("s", "old", []byte("old")))
		require.NoError(t, st.Put("t", "old", []byte("old")))
		n, err := st.Sweep(time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "nothing is older than an hour")
		// S3 keeps an object's time to the second (and may round it):
		// the cutoff is a second past the old images, and the new one is
		// written once the clock is a whole second past the cutoff. This
		// waits on the clock itself, nothing else.
		cutoff := time.Now().Add(time.Second)
		time.Sleep(time.Until(cutoff.Truncate(time.Second).Add(time.Second)))
		require.NoError(t, st.Put("s", "new", []byte("new")))
		require.NoError(t, st.PutBase("sum", []byte("snapshot")))
		_, err = st.Acquire("expired", "a", cutoff.Add(-time.Minute), "")
		require.NoError(t, err)
		_, err = st.Acquire("live", "a", time.Now().Add(time.Hour), "")
		require.NoError(t, err)

		n, err = st.Sweep(cutoff)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		for _, s := range []string{"s", "t"} {
			_, err = st.Take(s, "old")
			require.ErrorIs(t, err, ErrNotFound, "Sweep removed %s's old image", s)
		}
		got, err := st.Take("s", "new")
		require.NoError(t, err, "Sweep keeps a newer image")
		require.Equal(t, "new", string(got))
		if bases {
			_, err = st.Base("sum")
			require.NoError(t, err, "Sweep keeps snapshots")
		}
		_, err = st.Acquire("live", "b", time.Now().Add(time.Hour), "")
		require.ErrorIs(t, err, ErrLeased, "Sweep keeps a lease that has not expired")
	})

	t.Run("Usage", func(t *testing.T) {
		st := open(t)
		images, n, err := st.Usage()
		require.NoError(t, err)
		require.Zero(t, images)
		require.Zero(t, n)
		require.NoError(t, st.Put("s1", "k1", make([]byte, 3)))
		require.NoError(t, st.Put("s1", "k2", make([]byte, 5)))
		require.NoError(t, st.Put("s2", "k1", make([]byte, 7)))
		require.NoError(t, st.PutBase("sum", make([]byte, 100)))
		_, err = st.Acquire("s1", "a", time.Now().Add(time.Hour), "")
		require.NoError(t, err)
		images, n, err = st.Usage()
		require.NoError(t, err)
		require.Equal(t, 3, images)
		require.EqualValues(t, 15, n)
		_, err = st.Take("s1", "k2")
		require.NoError(t, err)
		images, n, err = st.Usage()
		require.NoError(t, err)
		require.Equal(t, 2, images)
		require.EqualValues(t, 10, n)
	})
}

// requireLease checks got against want, its time to the millisecond (a
// store may keep less than the nanoseconds).
func requireLease(t *testing.T, want, got Lease) {
	t.Helper()
	require.Equal(t, want.Owner, got.Owner)
	require.WithinDuration(t, want.Until, got.Until, time.Millisecond)
}

// setS3Env points the AWS SDK of this process at endpoint (s3test.Env).
func setS3Env(t testing.TB, endpoint string) { s3test.Env(t, endpoint) }

func TestS3Store(t *testing.T) {
	testenv.RealEngines(t, "a SeaweedFS S3 server")
	endpoint, bucket := s3test.Start(t)
	setS3Env(t, endpoint)
	var n atomic.Int64
	openS3 := func(t *testing.T) *S3 {
		st, err := OpenS3(context.Background(), fmt.Sprintf("s3://%s/t%d/store", bucket, n.Add(1)))
		require.NoError(t, err)
		return st
	}
	testStore(t, func(t *testing.T) Store { return openS3(t) })

	t.Run("ConditionalWrites", func(t *testing.T) {
		// What the leases rely on, asked of the server directly.
		st := openS3(t)
		ctx := context.Background()
		key := st.prefix + "cond"
		require.NoError(t, st.put(ctx, key, []byte("1"), true, ""))
		err := st.put(ctx, key, []byte("2"), true, "")
		require.Error(t, err, "If-None-Match: * over an object")
		require.True(t, conflict(err), "%v", err)
		_, etag, err := st.get(ctx, key)
		require.NoError(t, err)
		err = st.put(ctx, key, []byte("3"), false, `"0123456789abcdef0123456789abcdef"`)
		require.Error(t, err, "If-Match with another ETag")
		require.True(t, conflict(err), "%v", err)
		require.NoError(t, st.put(ctx, key, []byte("4"), false, etag))
		data, etag4, err := st.get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, "4", string(data))
		deleted, err := st.deleteIfMatch(ctx, key, etag)
		require.NoError(t, err)
		require.False(t, deleted, "a delete If-Match of an old ETag")
		_, _, err = st.get(ctx, key)
		require.NoError(t, err, "the object a stale conditional delete named stays")
		deleted, err = st.deleteIfMatch(ctx, key, etag4)
		require.NoError(t, err)
		require.True(t, deleted)
		_, _, err = st.get(ctx, key)
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("SweepRemovesExpiredLeases", func(t *testing.T) {
		st := openS3(t)
		ctx := context.Background()
		_, err := st.Acquire("expired", "a", time.Now().Add(-time.Minute), "")
		require.NoError(t, err)
		_, err = st.Acquire("live", "a", time.Now().Add(time.Hour), "")
		require.NoError(t, err)
		_, err = st.Sweep(time.Now())
		require.NoError(t, err)
		_, _, err = st.get(ctx, st.leaseKey("expired"))
		require.ErrorIs(t, err, ErrNotFound, "the expired lease's object is gone")
		_, _, err = st.get(ctx, st.leaseKey("live"))
		require.NoError(t, err, "the live lease's object stays")
	})

	t.Run("Prefixes", func(t *testing.T) {
		// Stores under two prefixes of one bucket, and one at the
		// bucket's root, see only their own images.
		a, b := openS3(t), openS3(t)
		require.NoError(t, a.Put("s", "k", []byte("a")))
		require.NoError(t, b.Put("s", "k", []byte("bb")))
		images, n, err := a.Usage()
		require.NoError(t, err)
		require.Equal(t, 1, images)
		require.EqualValues(t, 1, n)
		got, err := b.Take("s", "k")
		require.NoError(t, err)
		require.Equal(t, "bb", string(got))
		got, err = a.Take("s", "k")
		require.NoError(t, err)
		require.Equal(t, "a", string(got))

		root, err := OpenS3(context.Background(), "s3://"+bucket)
		require.NoError(t, err)
		require.Empty(t, root.prefix)
		require.NoError(t, root.Put("s", "k", []byte("root")))
		_, err = root.client.HeadObject(context.Background(), &s3.HeadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(name("s") + "/" + name("k") + ".img"),
		})
		require.NoError(t, err, "the layout at the bucket's root")
		require.NoError(t, root.Delete("s"))
	})

	t.Run("OpenMissingBucket", func(t *testing.T) {
		start := time.Now()
		_, err := OpenS3(context.Background(), "s3://no-such-bucket-here/p")
		require.Error(t, err)
		require.Less(t, time.Since(start), 10*time.Second)
		require.ErrorContains(t, err, "session store (s3://no-such-bucket-here/p)")
		require.ErrorContains(t, err, "the bucket does not exist")
		require.ErrorContains(t, err, endpoint)
	})

	t.Run("OpenWrongCredentials", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
		start := time.Now()
		_, err := OpenS3(context.Background(), "s3://"+bucket)
		require.Error(t, err)
		require.Less(t, time.Since(start), 10*time.Second)
		require.ErrorContains(t, err, "AWS_SECRET_ACCESS_KEY")
	})
}

func TestOpenS3Spec(t *testing.T) {
	for _, spec := range []string{"", "bucket/prefix", "gs://bucket", "s3://", "s3:///prefix"} {
		_, err := OpenS3(context.Background(), spec)
		require.Error(t, err, spec)
		require.ErrorContains(t, err, "session store", spec)
	}
}

func TestOpenS3DeadEndpoint(t *testing.T) {
	// A port nothing listens on: the connection is refused at once, and
	// OpenS3 gives up after its few attempts with what to set.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	endpoint := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	setS3Env(t, endpoint)
	start := time.Now()
	_, err = OpenS3(context.Background(), "s3://bucket/prefix")
	require.Error(t, err)
	t.Log(err)
	require.Less(t, time.Since(start), 10*time.Second, "OpenS3's check is bounded")
	require.ErrorContains(t, err, "session store (s3://bucket/prefix)")
	require.ErrorContains(t, err, endpoint)
	require.ErrorContains(t, err, "AWS_ENDPOINT_URL")
	require.ErrorContains(t, err, "AWS_ACCESS_KEY_ID")
}

func TestOpenS3NoRegion(t *testing.T) {
	// Without an endpoint, the store is AWS's, which needs a region.
	setS3Env(t, "")
	_, err := OpenS3(context.Background(), "s3://bucket")
	require.Error(t, err)
	t.Log(err)
	require.ErrorContains(t, err, "AWS_REGION")
}

// BenchmarkS3PutTake puts and takes an image of 3.5 MiB (random, so
// nothing compresses it) through SeaweedFS on the loopback.
func BenchmarkS3PutTake(b *testing.B) {
	testenv.RealEngines(b, "a SeaweedFS S3 server")
	endpoint, bucket := s3test.Start(b)
	setS3Env(b, endpoint)
	st, err := OpenS3(context.Background(), "s3://"+bucket+"/bench")
	if err != nil {
		b.Fatal(err)
	}
	img := make([]byte, 3<<20+512<<10)
	rand.Read(img)
	b.SetBytes(int64(len(img)))
	var put, take time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := st.Put("s", "k", img); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		got, err := st.Take("s", "k")
		if err != nil {
			b.Fatal(err)
		}
		put, take = put+t1.Sub(t0), take+time.Since(t1)
		if !bytes.Equal(got, img) {
			b.Fatal("the image taken differs from the one put")
		}
	}
	b.ReportMetric(float64(put.Milliseconds())/float64(b.N), "put-ms/op")
	b.ReportMetric(float64(take.Milliseconds())/float64(b.N), "take-ms/op")
}

// TestDirStore runs the store's contract on a dir.
func TestDirStore(t *testing.T) {
	testStore(t, func(t *testing.T) Store {
		d, err := Open(t.TempDir())
		require.NoError(t, err)
		return d
	})
}

// TestMemoryStore runs the store's contract on the process's memory.
func TestMemoryStore(t *testing.T) {
	testStore(t, func(t *testing.T) Store { return &Memory{} }, false)
}
