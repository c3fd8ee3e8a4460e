// Package archtest holds tests of the code's shape as a whole: the import
// rules of the design (docs/development.md, "Conventions"). It has no
// production code.
package archtest
