package sessionstore

import (
	"context"
	"strings"
)

// OpenSpec opens the store code_execution.session_store names: an
// s3://bucket/prefix URL (OpenS3), else an absolute path of a dir (Open).
func OpenSpec(ctx context.Context, spec string) (Store, error) {
	if strings.HasPrefix(spec, "s3://") {
		s, err := OpenS3(ctx, spec)
		if err != nil {
			return nil, err // not a nil *S3 in a non-nil Store
		}
		return s, nil
	}
	d, err := Open(spec)
	if err != nil {
		return nil, err
	}
	return d, nil
}
