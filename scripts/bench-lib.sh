# Shared by the bench-*.sh scripts (sourced, not run). CPU is the core
# benchmarks are pinned to (default 1).

# pin runs a command on one core with GOMAXPROCS=1.
pin() {
	if command -v taskset >/dev/null 2>&1; then
		GOMAXPROCS=1 taskset -c "${CPU:-1}" "$@"
	else
		echo "taskset not found; running unpinned" >&2
		GOMAXPROCS=1 "$@"
	fi
}

# median prints the median of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
