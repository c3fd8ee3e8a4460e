package tenancy

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Store keeps tenants, clusters and credentials in Postgres. Every method
// takes the tenant ID first and only ever touches that tenant's rows; "not
// found" and "another tenant's" give the same fault.NotFound error. Methods
// that read across tenants say All in their name.
type Store struct {
	pool *pgxpool.Pool
	ca   *ClientCA
	now  func() time.Time
}

// NewStore returns a store on pool. ca issues client certificates; it may be
// nil, and then certificate credentials cannot be created.
func NewStore(pool *pgxpool.Pool, ca *ClientCA) *Store {
	return &Store{pool: pool, ca: ca, now: time.Now}
}

// IssuesCertificates reports whether the store has a client CA, without
// which certificate credentials cannot be created.
func (s *Store) IssuesCertificates() bool { return s.ca != nil }

func validateName(kind, name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return invalid(nil, "invalid %s name %q: %s", kind, name, strings.Join(errs, "; "))
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func notFound(kind string) *fault.Error { return fault.Errorf(fault.NotFound, "%s not found", kind) }

// invalid is a 422 about a value the store refuses. Its one cause repeats
// the message and names no field, since the store does not know which field
// of a request the value came from; the admin API has always sent these
// errors with that cause.
func invalid(err error, format string, args ...any) *fault.Error {
	e := fault.Wrap(err, fault.Invalid, format, args...)
	e.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: e.Message}}
	return e
}

// withTx runs fn in a transaction and commits it. A NOTIFY sent inside fn is
// delivered at commit.
func (s *Store) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}
