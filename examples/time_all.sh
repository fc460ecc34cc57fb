#!/usr/bin/env bash
# Times the main computation of each ported tutorial in peel
# (BenchmarkTutorial in examples/<name>/main_test.go, at 1 and 2 threads by
# go test -cpu 1,2) and in PyTorch (examples/<name>/testdata/time_torch.py,
# at 1 and 2 threads), one measurement after another, and prints a table of
# the times per iteration, in ms, with the ratio peel/torch (below 1: peel
# is faster). Each number is the best of RUNS runs. When the Python has no
# torch with functorch or torch.func, the torch columns read "-".
#
#   bash examples/time_all.sh               # RUNS=1
#   RUNS=2 bash examples/time_all.sh        # the best of 2 runs of each
#
# Environment: RUNS (1), BENCHTIME (go test -benchtime, 2s), MINTIME (the
# torch scripts' --mintime, 2), PYTHON (/usr/bin/python3, else python3),
# EXAMPLES (the tutorials to time, space-separated; all eight).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-1}
BENCHTIME=${BENCHTIME:-2s}
MINTIME=${MINTIME:-2}
if [ -z "${PYTHON:-}" ]; then
	PYTHON=python3
	[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
fi
EXAMPLES=${EXAMPLES:-"per_sample_grads ensembling jacobians_hessians neural_tangent_kernels pinn gp_regression maml dp_sgd"}

torch=yes
if ! "$PYTHON" -c 'import torch
try:
    import torch.func
except ImportError:
    import functorch' >/dev/null 2>&1; then
	torch=no
	echo "note: $PYTHON has no torch with functorch or torch.func; timing peel only" >&2
fi

# min prints the smallest of its arguments, or "-" when it has none.
min() {
	if [ $# -eq 0 ]; then echo -; else printf '%s\n' "$@" | sort -g | head -n 1; fi
}

# ratio prints $1/$2 with 2 decimals, or "-".
ratio() {
	if [ "$1" = - ] || [ "$2" = - ]; then echo -; else awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; fi
}

rows=()
for name in $EXAMPLES; do
	echo "timing $name" >&2
	peel1=() peel2=() torch1=() torch2=()
	for _ in $(seq "$RUNS"); do
		out=$(go test -run NONE -bench '^BenchmarkTutorial$' -benchtime "$BENCHTIME" -cpu 1,2 "./examples/$name/")
		peel1+=($(awk '$1 == "BenchmarkTutorial" && $4 == "ns/op" { printf "%.4g\n", $3 / 1e6 }' <<<"$out"))
		peel2+=($(awk '$1 == "BenchmarkTutorial-2" && $4 == "ns/op" { printf "%.4g\n", $3 / 1e6 }' <<<"$out"))
		if [ $torch = yes ]; then
			for n in 1 2; do
				out=$("$PYTHON" "examples/$name/testdata/time_torch.py" --threads $n --mintime "$MINTIME")
				t=$(awk -v n="threads=$n:" '$3 == n && $5 == "ms/iter" { print $4 }' <<<"$out")
				if [ $n = 1 ]; then torch1+=($t); else torch2+=($t); fi
			done
		fi
	done
	p1=$(min "${peel1[@]}") p2=$(min "${peel2[@]}") t1=$(min "${torch1[@]}") t2=$(min "${torch2[@]}")
	rows+=("| $name | $p1 | $t1 | $(ratio "$p1" "$t1") | $p2 | $t2 | $(ratio "$p2" "$t2") |")
done

echo "machine: $(nproc) cores, $(grep -m 1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); $(go version | cut -d' ' -f3)$([ $torch = yes ] && echo ", torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"); best of $RUNS"
echo
echo "| tutorial | peel 1 thread (ms) | torch 1 thread (ms) | peel/torch | peel 2 threads (ms) | torch 2 threads (ms) | peel/torch |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
