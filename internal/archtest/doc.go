// Package archtest holds tests of the code's shape as a whole: the import
// rules of the design, the length of production files and the ban on bare
// sleeps in tests (docs/development.md, "Conventions"). It has no
// production code.
package archtest
