package sessionstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 is a store in a bucket of an S3-compatible object store, laid out
// as Dir lays out its dir, under the spec's prefix:
//
//	prefix/<name(session)>/<name(kernel)>.img   an image
//	prefix/<name(session)>/lease                the session's lease (JSON)
//	prefix/snapshots/<name(sum)>.snap           an interpreter snapshot
//
// A Put is atomic by the object store's nature: a reader gets the whole
// old object or the whole new one. Leases rely on conditional writes
// (If-None-Match: * to create, If-Match: <ETag> to replace), which AWS S3
// and SeaweedFS honour; see Acquire. It is safe for concurrent use by
// several goroutines, processes and replicas.
type S3 struct {
	client *s3.Client
	bucket string
	prefix string // "" or ending in "/"
	where  string // "s3://bucket/prefix", for errors
}

// s3OpTimeout bounds one call of a Store method on S3 (its requests and
// the SDK's retries of them): a server that stopped answering fails the
// call rather than hanging it.
const s3OpTimeout = 2 * time.Minute

// s3OpenTimeout bounds OpenS3's reachability check, and s3OpenAttempts
// its attempts: a wrong endpoint or bucket is told in seconds, not after
// the SDK's full backoff.
const (
	s3OpenTimeout  = 15 * time.Second
	s3OpenAttempts = 2
)

// s3LeaseAttempts bounds how often Acquire re-reads a lease that changed
// between its read and its conditional write before it gives up.
const s3LeaseAttempts = 8

// OpenS3 opens the store that spec names: s3://bucket or
// s3://bucket/prefix. The endpoint, region and credentials come from the
// AWS SDK's usual environment and files (AWS_REGION, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/config and credentials, an
// instance or container role). AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_S3,
// points it at another S3-compatible server (SeaweedFS, Ceph, Garage,
// R2...): then requests use path-style addressing
// (http://host/bucket/key, no bucket.host DNS names), and the region, when
// none is set, is us-east-1 (the one such servers usually expect in the
// signature). OpenS3 checks that the bucket answers (HeadBucket), and
// says what to set when it does not.
func OpenS3(ctx context.Context, spec string) (*S3, error) {
	rest, ok := strings.CutPrefix(spec, "s3://")
	if !ok {
		return nil, fmt.Errorf("session store %q: not an s3://bucket/prefix URL", spec)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return nil, fmt.Errorf("session store %q: no bucket (s3://bucket/prefix)", spec)
	}
	s := &S3{bucket: bucket, where: "s3://" + bucket}
	if prefix != "" {
		s.prefix = prefix + "/"
		s.where += "/" + prefix
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, s.fail("loading the AWS configuration", err)
	}
	custom := false
	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		// BaseEndpoint is resolved by now from AWS_ENDPOINT_URL(_S3) or
		// the config file's endpoint_url.
		if o.BaseEndpoint != nil && *o.BaseEndpoint != "" {
			custom = true
			o.UsePathStyle = true
			if o.Region == "" {
				o.Region = "us-east-1"
			}
		}
	})
	if s.client.Options().Region == "" {
		return nil, fmt.Errorf("session store (%s): no AWS region: set AWS_REGION (or region in ~/.aws/config), or AWS_ENDPOINT_URL for a server other than AWS", s.where)
	}
	ctx, cancel := context.WithTimeout(ctx, s3OpenTimeout)
	defer cancel()
	_, err = s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}, func(o *s3.Options) {
		o.RetryMaxAttempts = s3OpenAttempts
	})
	if err != nil {
		endpoint := "AWS S3 (set AWS_ENDPOINT_URL for another S3-compatible server)"
		if custom {
			endpoint = *s.client.Options().BaseEndpoint + " (from AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3)"
		}
		hint := "check AWS_ENDPOINT_URL, AWS_REGION, and the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"
		switch status(err) {
		case http.StatusNotFound:
			hint = "the bucket does not exist: create it, or fix the bucket's name"
		case http.StatusForbidden, http.StatusUnauthorized:
			hint = "access denied: check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) and their rights on the bucket"
		case http.StatusMovedPermanently:
			hint = "the bucket is in another region: set AWS_REGION to it"
		}
		return nil, fmt.Errorf("session store (%s): the bucket does not answer at %s: %s: %w", s.where, endpoint, hint, err)
	}
	return s, nil
}

// fail wraps err with the store and what was being done.
func (s *S3) fail(what string, err error) error {
	return fmt.Errorf("session store (%s): %s: %w", s.where, what, err)
}

func (s *S3) sessionPrefix(session string) string { return s.prefix + name(session) + "/" }

func (s *S3) imageKey(session, kernel string) string {
	return s.sessionPrefix(session) + name(kernel) + ".img"
}

func (s *S3) leaseKey(session string) string { return s.sessionPrefix(session) + "lease" }

func (s *S3) baseKey(sum string) string { return s.prefix + "snapshots/" + name(sum) + ".snap" }

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s3OpTimeout)
}

// status is err's HTTP status code, 0 when it has none.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// errorCode is err's S3 error code ("NoSuchKey"), "" when it has none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// missing reports whether err says the object does not exist (and not
// that the bucket does not).
func missing(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	}
	return false
}

// conflict reports whether err is a conditional request that lost: the
// object's ETag no longer matches, it exists already (If-None-Match), or
// another conditional write to it was in flight (409).
func conflict(err error) bool {
	switch errorCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	switch status(err) {
	case http.StatusPreconditionFailed, http.StatusConflict:
		return true
	}
	return false
}

// unsupported reports whether err is a server refusing a feature of the
// request (here: a conditional delete) rather than the request itself.
func unsupported(err error) bool {
	return errorCode(err) == "NotImplemented" || status(err) == http.StatusNotImplemented
}

// get returns the object at key and its ETag.
func (s *S3) get(ctx context.Context, key string) ([]byte, string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		if missing(err) {
			return nil, "", ErrNotFound
		}
		return nil, "", err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", err
	}
	return data, aws.ToString(out.ETag), nil
}

// put writes data at key; with ifNoneMatch, only when there is no object
// there, with ifMatch, only when the object there has that ETag.
func (s *S3) put(ctx context.Context, key string, data []byte, ifNoneMatch bool, ifMatch string) error {
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	_, err := s.client.PutObject(ctx, in)
	return err
}

// deleteIfMatch deletes the object at key if its ETag is etag, and
// reports whether it did: false when the object changed or is gone. A
// server that does not implement conditional deletes gets an
// unconditional one, and so does an empty etag (a server that lists no
// ETags): that races with a write between the caller's read of etag and
// the delete (the written object is deleted too).
func (s *S3) deleteIfMatch(ctx context.Context, key, etag string) (bool, error) {
	in := &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	_, err := s.client.DeleteObject(ctx, in)
	if err != nil && etag != "" && unsupported(err) {
		_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
	}
	switch {
	case err == nil:
		return true, nil
	case conflict(err) || missing(err):
		return false, nil
	}
	return false, err
}

// list calls each with every object under prefix.
func (s *S3) list(ctx context.Context, prefix string, each func(types.Object) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if err := each(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// Put implements Store.
func (s *S3) Put(session, kernel string, data []byte) error {
	ctx, cancel := opContext()
	defer cancel()
	if err := s.put(ctx, s.imageKey(session, kernel), data, false, ""); err != nil {
		return s.fail("writing an image", err)
	}
	return nil
}

// Take implements Store: it reads the image, then deletes it if it is
// still the one read (a conditional delete), so that an image written
// over it meanwhile stays for the next Take.
func (s *S3) Take(session, kernel string) ([]byte, error) {
	ctx, cancel := opContext()
	defer cancel()
	key := s.imageKey(session, kernel)
	for range s3LeaseAttempts {
		data, etag, err := s.get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, s.fail("reading an image", err)
		}
		deleted, err := s.deleteIfMatch(ctx, key, etag)
		if err != nil {
			return nil, s.fail("removing a resumed image", err)
		}
		if deleted {
			return data, nil
		}
		// Replaced (or taken) between the read and the delete: what was
		// read is not the image to resume; read again.
	}
	return nil, s.fail("taking an image", errors.New("it changed under every attempt"))
}

// Delete implements Store.
func (s *S3) Delete(session string) error {
	ctx, cancel := opContext()
	defer cancel()
	var keys []types.ObjectIdentifier
	err := s.list(ctx, s.sessionPrefix(session), func(o types.Object) error {
		if aws.ToString(o.Key) != s.leaseKey(session) { // the lease stays: see Store.Delete
			keys = append(keys, types.ObjectIdentifier{Key: o.Key})
		}
		return nil
	})
	for len(keys) > 0 && err == nil {
		n := min(len(keys), 1000) // DeleteObjects' limit
		var out *s3.DeleteObjectsOutput
		out, err = s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &s.bucket,
			Delete: &types.Delete{Objects: keys[:n], Quiet: aws.Bool(true)},
		})
		if err == nil && len(out.Errors) > 0 {
			e := out.Errors[0]
			err = fmt.Errorf("%s: %s (%s)", aws.ToString(e.Key), aws.ToString(e.Message), aws.ToString(e.Code))
		}
		keys = keys[n:]
	}
	if err != nil {
		return s.fail("deleting a session", err)
	}
	return nil
}

// Copy implements Store, with the server copying each object.
func (s *S3) Copy(from, to string) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	var keys []string
	err := s.list(ctx, s.sessionPrefix(from), func(o types.Object) error {
		if strings.HasSuffix(aws.ToString(o.Key), ".img") {
			keys = append(keys, aws.ToString(o.Key))
		}
		return nil
	})
	if err != nil {
		return 0, s.fail("listing a session's images", err)
	}
	n := 0
	for _, key := range keys {
		dst := s.sessionPrefix(to) + strings.TrimPrefix(key, s.sessionPrefix(from))
		_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
			Bucket:     &s.bucket,
			Key:        &dst,
			CopySource: aws.String(copySource(s.bucket, key)),
		})
		if missing(err) {
			continue // resumed meanwhile
		}
		if err != nil {
			return n, s.fail("copying an image", err)
		}
		n++
	}
	return n, nil
}

// copySource is CopyObject's x-amz-copy-source for key in bucket: each
// path segment escaped.
func copySource(bucket, key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return url.PathEscape(bucket) + "/" + strings.Join(parts, "/")
}

// PutBase implements Store. A snapshot there already is kept: it is
// checked first (a HEAD costs less than an upload), and the upload is
// conditional (If-None-Match), so that of two processes storing the same
// snapshot at once one writes it.
func (s *S3) PutBase(sum string, data []byte) error {
	ctx, cancel := opContext()
	defer cancel()
	key := s.baseKey(sum)
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err == nil {
		return nil
	}
	if !missing(err) && status(err) != http.StatusNotFound {
		return s.fail("looking for a snapshot", err)
	}
	if err := s.put(ctx, key, data, true, ""); err != nil && !conflict(err) {
		return s.fail("writing a snapshot", err)
	}
	return nil
}

// Base implements Store.
func (s *S3) Base(sum string) ([]byte, error) {
	ctx, cancel := opContext()
	defer cancel()
	data, _, err := s.get(ctx, s.baseKey(sum))
	if errors.Is(err, ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, s.fail("reading a snapshot", err)
	}
	return data, nil
}

// SessionBytes implements Store.
func (s *S3) SessionBytes(session, kernel string) (int64, error) {
	ctx, cancel := opContext()
	defer cancel()
	skip := s.imageKey(session, kernel)
	var n int64
	err := s.list(ctx, s.sessionPrefix(session), func(o types.Object) error {
		if k := aws.ToString(o.Key); strings.HasSuffix(k, ".img") && k != skip {
			n += aws.ToInt64(o.Size)
		}
		return nil
	})
	if err != nil {
		return 0, s.fail("listing a session's images", err)
	}
	return n, nil
}

// leaseBody is a lease object's JSON.
type leaseBody struct {
	Owner string    `json:"owner"`
	Until time.Time `json:"until"`
}

// readLease returns session's lease and its object's ETag; ErrNotFound
// when there is none.
func (s *S3) readLease(ctx context.Context, session string) (Lease, string, error) {
	data, etag, err := s.get(ctx, s.leaseKey(session))
	if err != nil {
		return Lease{}, "", err
	}
	var b leaseBody
	if err := json.Unmarshal(data, &b); err != nil {
		return Lease{}, "", fmt.Errorf("a lease that is not JSON (%q): %w", data, err)
	}
	return Lease(b), etag, nil
}

// Acquire implements Store. The lease is an object written with a
// condition: If-None-Match: * when there is none (the write fails when
// another process created one first), else If-Match: the ETag of the lease
// read (the write fails when another process replaced it since). A
// failed write (412 Precondition Failed, or 409 when another conditional
// write to it was in flight) means another process acquired or renewed
// the lease: Acquire reads it again and decides again, at most
// s3LeaseAttempts times. Whether a lease has expired is judged by this
// machine's clock: replicas sharing a store must keep their clocks
// synchronised (well within a lease's length).
func (s *S3) Acquire(session, owner string, until time.Time, replace string) (Lease, error) {
	ctx, cancel := opContext()
	defer cancel()
	body, err := json.Marshal(leaseBody{Owner: owner, Until: until.UTC()})
	if err != nil {
		return Lease{}, s.fail("a lease", err)
	}
	mine := Lease{Owner: owner, Until: until}
	key := s.leaseKey(session)
	for range s3LeaseAttempts {
		cur, etag, err := s.readLease(ctx, session)
		switch {
		case errors.Is(err, ErrNotFound):
			err = s.put(ctx, key, body, true, "")
		case err != nil:
			return Lease{}, s.fail("reading a lease", err)
		case cur.Owner == owner || !time.Now().Before(cur.Until) || (replace != "" && cur.Owner == replace):
			err = s.put(ctx, key, body, false, etag)
		default:
			return cur, leasedError(session, cur)
		}
		if err == nil {
			return mine, nil
		}
		// A conditional write that lost; If-Match on an object deleted
		// meanwhile fails with 404.
		if !conflict(err) && !missing(err) {
			return Lease{}, s.fail("writing a lease", err)
		}
	}
	return Lease{}, s.fail("writing a lease", fmt.Errorf("session %q: the lease changed under each of %d attempts", session, s3LeaseAttempts))
}

// Release implements Store: the lease is deleted only if it is still the
// one read, owned by owner (a conditional delete; see deleteIfMatch for a
// server without them).
func (s *S3) Release(session, owner string) error {
	ctx, cancel := opContext()
	defer cancel()
	cur, etag, err := s.readLease(ctx, session)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return s.fail("reading a lease", err)
	}
	if cur.Owner != owner {
		return nil
	}
	if _, err := s.deleteIfMatch(ctx, s.leaseKey(session), etag); err != nil {
		return s.fail("releasing a lease", err)
	}
	return nil
}

// Sweep implements Store. An image's age is its object's LastModified,
// which S3 keeps to the second; an image or lease is removed only if it
// is still the one listed or read (a conditional delete).
func (s *S3) Sweep(before time.Time) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	var images []types.Object
	var leases, stale []string
	err := s.list(ctx, s.prefix, func(o types.Object) error {
		k := aws.ToString(o.Key)
		rel := strings.TrimPrefix(k, s.prefix)
		switch {
		case strings.HasPrefix(rel, "snapshots/"):
		case strings.HasPrefix(rel, "handoff/"):
			if aws.ToTime(o.LastModified).Before(before) {
				stale = append(stale, k)
			}
		case strings.HasSuffix(k, ".img") && aws.ToTime(o.LastModified).Before(before):
			images = append(images, o)
		case strings.HasSuffix(k, "/lease"):
			leases = append(leases, k)
		}
		return nil
	})
	if err != nil {
		return 0, s.fail("listing the store", err)
	}
	for _, k := range stale {
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(k)}); err != nil && !missing(err) {
			return 0, s.fail("removing an old handoff request", err)
		}
	}
	n := 0
	for _, o := range images {
		// Conditional on the ETag listed: an image written since the
		// listing is new, and stays.
		deleted, err := s.deleteIfMatch(ctx, aws.ToString(o.Key), aws.ToString(o.ETag))
		if err != nil {
			return n, s.fail("removing an old image", err)
		}
		if deleted {
			n++
		}
	}
	for _, k := range leases {
		data, etag, err := s.get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return n, s.fail("reading a lease", err)
		}
		var b leaseBody
		if json.Unmarshal(data, &b) == nil && !b.Until.Before(before) {
			continue
		}
		// Expired, or not a lease at all. The delete is conditional, so
		// that a lease acquired since the read stays.
		if _, err := s.deleteIfMatch(ctx, k, etag); err != nil {
			return n, s.fail("removing an expired lease", err)
		}
	}
	return n, nil
}

// Usage implements Store.
func (s *S3) Usage() (images int, bytes int64, err error) {
	ctx, cancel := opContext()
	defer cancel()
	err = s.list(ctx, s.prefix, func(o types.Object) error {
		k := aws.ToString(o.Key)
		if strings.HasSuffix(k, ".img") && !strings.HasPrefix(strings.TrimPrefix(k, s.prefix), "snapshots/") {
			images++
			bytes += aws.ToInt64(o.Size)
		}
		return nil
	})
	if err != nil {
		return 0, 0, s.fail("listing the store", err)
	}
	return images, bytes, nil
}

var _ Store = (*S3)(nil)

// handoffPrefix is owner's inbox of handoff requests.
func (s *S3) handoffPrefix(owner string) string { return s.prefix + "handoff/" + name(owner) + "/" }

// AskHandoff implements Store: an object named for the session, holding
// its name, under the holder's inbox.
func (s *S3) AskHandoff(holder, session string) error {
	ctx, cancel := opContext()
	defer cancel()
	if err := s.put(ctx, s.handoffPrefix(holder)+name(session), []byte(session), false, ""); err != nil {
		return s.fail("asking for a handoff", err)
	}
	return nil
}

// Asked implements Store: one listing of the inbox (the owner polls it),
// then a read and a delete of each request found.
func (s *S3) Asked(owner string) ([]string, error) {
	ctx, cancel := opContext()
	defer cancel()
	var keys []string
	err := s.list(ctx, s.handoffPrefix(owner), func(o types.Object) error {
		keys = append(keys, aws.ToString(o.Key))
		return nil
	})
	if err != nil {
		return nil, s.fail("listing handoff requests", err)
	}
	var sessions []string
	for _, k := range keys {
		data, _, err := s.get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err == nil {
			_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(k)})
		}
		if err != nil && !missing(err) {
			return sessions, s.fail("reading a handoff request", err)
		}
		sessions = append(sessions, string(data))
	}
	return sessions, nil
}
