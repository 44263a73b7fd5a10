#!/bin/bash
# bench_ledger.sh - the node ledger at a large site's scale.
#   1. `vigil nodes` over a synthetic ledger of one year of incidents for
#      NODES nodes (default 10,000): wall time and peak memory (RSS) of the
#      table, of --json, and of `--quarantined --format slurm` (what the
#      sbatch template runs), medians of REPS runs (default 5).  The ledger
#      is what a year leaves: each node's records compacted into one store
#      file, and the last day's, of one node in ten, still in the spool.
#   2. A job's pre-check with the ledger on against off, in the same run,
#      as a ratio: `vigil check` on one node (the check "ledger" reads the
#      node's records: its store file and the spool's listing), and a
#      2-rank `mpirun vigil run --dry-run` (every node's pre-check, the
#      gather, the plan).  The runs alternate on and off, REPS each.
# Machines here are shared and noisy: compare the ratios, not the times.
#
# Usage: tests/bench/bench_ledger.sh [VIGIL]   (default ./vigil)
# Env: NODES, PER_NODE (mean incidents a node a year, default 8), REPS
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
nodes=${NODES:-10000}
per_node=${PER_NODE:-8}
reps=${REPS:-5}
mpirun=${MPIRUN:-mpirun}
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
scratch=$(mktemp -d "${TMPDIR:-/tmp}/bench-ledger.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
D=$scratch/ledger
mkdir -m 755 "$D" "$D/store"
mkdir -m 1777 "$D/spool"

# One year of incidents: most nodes have a few (Poisson, mean PER_NODE),
# one in a hundred is a lemon with ten times as many, one in two hundred
# was quarantined by hand; kinds and evidence as vigil writes them.
t0=$(date +%s%N)
python3 - "$D" "$nodes" "$per_node" <<'EOF'
import json, math, os, random, sys, time
d, nodes, per_node = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
random.seed(26)
now = time.time()
year = 365 * 86400
kinds = [("healthcheck", "nics", "", "eth1 is down (operstate down, no carrier)"),
         ("fault", "nic", "eth1", "eth1 is down (operstate down, no carrier)"),
         ("precheck", "storage", "", "/scratch has 812 MB free, below 10240 MB"),
         ("lost", "", "", "node (rank 17) lost: no heartbeat for 30.2 s"),
         ("straggler", "", "", "node is a straggler: e2e 4210 ms, 31% above the median"),
         ("board", "xid", "0000:3b:00.0", "XID 79 (GPU has fallen off the bus)"),
         ("board", "ecc", "0000:86:00.0", "2 uncorrectable ECC errors (volatile)")]
weights = [30, 25, 20, 10, 10, 3, 2]
def poisson(lam):
    l, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= random.random()
        if p <= l:
            return k
        k += 1
def record(node, t, kind, check, device, evidence, extra=None):
    r = {"id": "%08x%016x" % (int(t), random.getrandbits(64)), "time": round(t, 3),
         "node": node, "kind": kind}
    if check: r["check"] = check
    if device: r["device"] = device
    r["job"] = str(random.randint(100000, 999999))
    r["user"] = "u%03d" % random.randint(0, 300)
    r["evidence"] = evidence
    if extra: r.update(extra)
    return r
total = spooled = 0
for i in range(nodes):
    node = "node%05d" % i
    lam = per_node * (10 if i % 100 == 7 else 1)
    recs = []
    for _ in range(poisson(lam)):
        k = random.choices(kinds, weights)[0]
        recs.append(record(node, now - random.random() * year, *k))
    if i % 200 == 3:
        recs.append(record(node, now - random.random() * year, "quarantine", "", "",
                           "replace DIMM B3", {"manual": True, "user": "root"}))
    recs.sort(key=lambda r: r["time"])
    # the last day's records of one node in ten are still in the spool
    spool = [r for r in recs if i % 10 == 1 and r["time"] > now - 86400]
    store = [r for r in recs if r not in spool]
    if store:
        os.makedirs("%s/store/%s" % (d, node), exist_ok=True)
        with open("%s/store/%s/c~gen.rec" % (d, node), "w") as f:
            for r in store:
                f.write(json.dumps(dict(r, uid=0), separators=(",", ":")) + "\n")
    for k, r in enumerate(spool):
        with open("%s/spool/%s~gen.%d.rec" % (d, node, k), "w") as f:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    total += len(recs)
    spooled += len(spool)
print("ledger: %d nodes, %d records (%d in the spool), %.0f MB" % (
    nodes, total, spooled,
    sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs) / 1e6))
EOF
echo "generated in $((($(date +%s%N) - t0) / 1000000)) ms"
cat >"$scratch/on.json" <<EOF
{"ledger": {"dir": "$D", "retention": "400d"}}
EOF
echo '{}' >"$scratch/off.json"

# stats CMD...: "MEDIAN_MS MAX_RSS_MB" of REPS runs of CMD
stats() {
	local i ms=() kb=() out
	for ((i = 0; i < reps; i++)); do
		out=$(/usr/bin/time -f '%e %M' "$@" 2>&1 >/dev/null | tail -n 1)
		ms+=("$(awk -v s="${out% *}" 'BEGIN { printf "%d", s * 1000 }')")
		kb+=("${out#* }")
	done
	printf '%s %s\n' "$(printf '%s\n' "${ms[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" \
		"$(printf '%s\n' "${kb[@]}" | sort -n | tail -n 1 | awk '{printf "%.1f", $1 / 1024}')"
}

echo "# vigil nodes over the ledger, median of $reps runs ($(nproc) cores, $(date -u +%Y-%m-%d))"
printf '%-40s %10s %12s\n' "case" "ms" "peak RSS MB"
for args in "" "--json" "--quarantined --format slurm"; do
	# shellcheck disable=SC2086
	read -r ms mb <<<"$(stats "$vigil" nodes --config "$scratch/on.json" $args)"
	printf '%-40s %10s %12s\n' "vigil nodes ${args:-(table)}" "$ms" "$mb"
done
printf '%-40s %10s\n' "quarantined now" \
	"$("$vigil" nodes --config "$scratch/on.json" --quarantined --format lines | wc -l)"

# pre_check NAME CMD...: the medians of REPS runs with the ledger on and off
# (the configuration in place of the word CFG in CMD), alternating, and
# their ratio
median_ms() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pre_check() {
	local name=$1 n=$2 i t a cmd on=() off=()
	shift 2
	for ((i = 0; i < n; i++)); do
		for cfg in on off; do
			cmd=()
			for a in "$@"; do
				[ "$a" = CFG ] && a=$scratch/$cfg.json
				cmd+=("$a")
			done
			t=$(date +%s%N)
			"${cmd[@]}" >/dev/null 2>&1 || true
			t=$((($(date +%s%N) - t) / 1000))
			if [ "$cfg" = on ]; then on+=("$t"); else off+=("$t"); fi
		done
	done
	awk -v n="$name" -v a="$(median_ms "${on[@]}")" -v b="$(median_ms "${off[@]}")" \
		'BEGIN { printf "%-40s %10.1f %10.1f %8.2f\n", n, a / 1000, b / 1000, a / b }'
}
export VIGIL_NODE_NAME=node00107  # a lemon: the most records to read
read -r ms mb <<<"$(stats "$vigil" nodes --config "$scratch/on.json" --node "$VIGIL_NODE_NAME" \
	--format lines)"
printf '%-40s %10s %12s\n' "vigil nodes --node (one node: $(
	"$vigil" nodes --config "$scratch/on.json" --json --node "$VIGIL_NODE_NAME" |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["nodes"][0]["incidents_total"])') records)" \
	"$ms" "$mb"
read -r ms mb <<<"$(stats "$vigil" --version)"
printf '%-40s %10s %12s\n' "vigil --version (a process start)" "$ms" "$mb"
echo "# a job's pre-check, ledger on against off, alternating; medians of $((4 * reps)) checks, $reps runs"
printf '%-40s %10s %10s %8s\n' "case" "on ms" "off ms" "ratio"
pre_check "vigil check" $((4 * reps)) "$vigil" check --config CFG
pre_check "mpirun -np 2 vigil run --dry-run" "$reps" timeout -k 10 120 "$mpirun" --oversubscribe \
	--bind-to none -np 2 "$vigil" run --config CFG --dry-run --mode single -- true
