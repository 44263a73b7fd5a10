#!/bin/bash
# The board check of `vigil check` and of the pre-check under mpirun,
# through the real dlopen() path against the fake NVML of tests/fakevendor
# (NVML's documented contract; the real library needs the boards), named
# by path in the configuration as a site does: a pending row remap, a
# reset-required or IMEX-domain recovery action, a board lost from the bus
# (named by its bus id) or gone from the enumeration, uncorrectable ECC
# errors fail; a throttled board and a call that fails warn;
# a library that hangs is cut off; an absent library is not an event.
# The same for AMD boards (ROCm SMI: RAS errors, temperature, a board lost)
# and Cambricon cards (CNDev: health, ECC) through their fake libraries.
. "$(dirname "$0")/lib.sh"

: "${FAKEVENDOR_DIR:?FAKEVENDOR_DIR must name the fake vendor libraries}"
R="$SCRATCH/root"
make_root "$R"
export VIGIL_FAKE_VENDOR="$SCRATCH/script"
printf '{"check": {"boards": {"nvml_library": "%s/libnvidia-ml.so.1"}}}\n' "$FAKEVENDOR_DIR" \
	> "$SCRATCH/cfg.json"
flags="--sysfs-root $R $(pascal_flags) --config $SCRATCH/cfg.json"
BOARDS='nvidia 0 bus 0000:04:00.0
nvidia 1 bus 0000:07:00.0'
script() { printf '%s\n%s\n' "$BOARDS" "$1" > "$VIGIL_FAKE_VENDOR"; }

script ""
out=$("$VIGIL" check $flags 2>&1); rc=$?
expect_eq "healthy boards: exit" 0 "$rc"
expect_eq "healthy boards: silent" "" "$out"

# case SCRIPT REGEX: one line naming the board check, exit 80.
case_fail() {
	script "$1"
	out=$("$VIGIL" check $flags 2>/dev/null); rc=$?
	expect_eq "$2: exit" 80 "$rc"
	expect_match "$2: the line" "$3" "$out"
}
case_fail "nvidia 0 remap.pending 1" "pending row remap" \
	'^vigil: boards: row-remap 0000:04:00\.0: row remapping pending'
case_fail "nvidia 1 recovery reset" "reset-required recovery action" \
	'^vigil: boards: recovery 0000:07:00\.0: .*reset the GPU'
case_fail "nvidia 1 error nvmlDeviceGetTemperatureV 16" "reset required" \
	'^vigil: boards: recovery 0000:07:00\.0: the GPU needs a reset'
case_fail "nvidia 1 lost 1" "lost from the bus" \
	'^vigil: boards: board 0000:07:00\.0: GPU is lost'
case_fail "nvidia 1 absent 1" "gone from the enumeration" \
	'^vigil: boards: board 0000:07:00\.0: slot 1 is not among the 1 board NVML sees'
case_fail "nvidia 0 ecc.volatile.uncorrected 2" "uncorrectable ECC" \
	'^vigil: boards: ecc 0000:04:00\.0: 2 uncorrectable ECC errors'
case_fail "nvidia 1 recovery imex" "recovery action 5 (NVML 13.3)" \
	'^vigil: boards: recovery 0000:07:00\.0: .*recover the IMEX domain'

# A call that fails leaves its facts unknown: a warning naming it and
# NVML's reason, never silence taken for health.
script "nvidia 0 error nvmlDeviceGetTotalEccErrors 999"
out=$("$VIGIL" check -v $flags 2>&1); rc=$?
expect_eq "a call failed: exit" 0 "$rc"
expect_match "a call failed: a warning with -v" \
	'boards: board 0000:04:00\.0: nvmlDeviceGetTotalEccErrors failed: Unknown Error \(999\)' "$out"

script "nvidia 0 throttle hw_thermal,power_brake"
out=$("$VIGIL" check $flags 2>&1); rc=$?
expect_eq "throttled: exit" 0 "$rc"
out=$("$VIGIL" check -v $flags 2>&1)
expect_match "throttled: a warning with -v" \
	'boards: throttle 0000:04:00\.0: clocks slowed down: HW thermal slowdown, HW power brake' "$out"

# A library stuck on a wedged board is cut off after the timeout.
printf 'nvidia - hang init\n%s\n' "$BOARDS" > "$VIGIL_FAKE_VENDOR"
t0=$(date +%s%N)
out=$("$VIGIL" check -v --timeout 1 $flags 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "hung library: exit" 0 "$rc"
expect_match "hung library: warning" 'boards: board nvml: NVML: did not answer within 1 s' "$out"
if [ "$ms" -lt 5000 ]; then pass "hung library: cut off (${ms} ms)"; else fail "hung library: ${ms} ms"; fi

# No library at the configured path, or none configured under another
# sysfs root: not an event, whatever the script says.
script "nvidia 0 remap.pending 1"
printf '{"check": {"boards": {"nvml_library": "%s/none.so"}}}\n' "$SCRATCH" > "$SCRATCH/none.json"
out=$("$VIGIL" check --sysfs-root "$R" $(pascal_flags) --config "$SCRATCH/none.json" 2>&1); rc=$?
expect_eq "absent library: exit" 0 "$rc"
expect_eq "absent library: silent" "" "$out"
out=$("$VIGIL" check --sysfs-root "$R" $(pascal_flags) 2>&1); rc=$?
expect_eq "no library asked under another root" 0 "$rc"

# --json: the facts behind the verdict.
script "nvidia 0 utilization 50"
summary=$("$VIGIL" check --json $flags 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = [x for x in d["nodes"][0]["report"]["checks"] if x["name"] == "boards"][0]
n = c["details"]["libraries"]["nvml"]
print(c["verdict"], n["available"], n["count"], n["boards"][0]["pci_bus_id"],
      n["boards"][0]["utilization_percent"])')
expect_eq "json: the boards check and its facts" "pass True 2 0000:04:00.0 50" "$summary"

# AMD and Cambricon boards through the fake ROCm SMI and CNDev, named in
# the configuration: each library is asked because the node has that
# vendor's boards (the Corona node's four MI50s, the synthetic MLU370 node).
# vendor_root NAME TOPOLOGY VENDOR: a sysfs tree with the topology's boards,
# and the script lines naming them for VENDOR in $VB.
vendor_root() {
	local ids i=0 b
	ids=$("$VIGIL" slots --json --topology "$TOPO_DIR/$2" | python3 -c '
import json, sys
print(" ".join(s["pci_bus_id"] for s in json.load(sys.stdin)["slots"]))')
	PASCAL_GPUS="$ids" make_root "$SCRATCH/$1"
	VB=""
	for b in $ids; do VB="$VB$3 $i bus $b"$'\n'; i=$((i + 1)); done
	VN=$i
}
printf '{"check": {"boards": {"rocm_smi_library": "%s/librocm_smi64.so.1", "cndev_library": "%s/libcndev.so"}}}\n' \
	"$FAKEVENDOR_DIR" "$FAKEVENDOR_DIR" > "$SCRATCH/others.json"
# vcheck NAME TOPOLOGY LINES: vigil check -v of that node, its boards scripted.
vcheck() {
	printf '%s%s\n' "$VB" "$3" > "$VIGIL_FAKE_VENDOR"
	out=$("$VIGIL" check -v --sysfs-root "$SCRATCH/$1" --topology "$TOPO_DIR/$2" --slots "$VN" \
		--nic eth1 --ib mlx5_0 --config "$SCRATCH/others.json" 2>&1); rc=$?
}
vendor_root amd mpibind-epyc-corona.xml amd
vcheck amd mpibind-epyc-corona.xml ""
expect_eq "ROCm SMI, healthy: exit" 0 "$rc"
expect_eq "ROCm SMI, healthy: silent" "" "$out"
vcheck amd mpibind-epyc-corona.xml "amd 1 ras.umc 0 4"
expect_eq "ROCm SMI, uncorrectable RAS errors: exit" 80 "$rc"
expect_match "ROCm SMI, uncorrectable RAS errors: the line" \
	'^vigil: boards: ras 0000:23:00\.0/umc: 4 uncorrectable errors in block umc' "$out"
vcheck amd mpibind-epyc-corona.xml "amd 2 temperature.edge 99
amd 2 critical.edge 95"
expect_eq "ROCm SMI, hot board: exit" 0 "$rc"
expect_match "ROCm SMI, hot board: a warning" \
	'warning: boards: temperature 0000:53:00\.0: 99 C, the board slows down at 95 C' "$out"
vcheck amd mpibind-epyc-corona.xml "amd 3 absent 1"
expect_eq "ROCm SMI, board lost: exit" 80 "$rc"
expect_match "ROCm SMI, board lost: the line" \
	'boards: board 0000:73:00\.0: slot 3 is not among the 3 boards ROCm SMI sees' "$out"
vendor_root mlu synthetic-mlu370-2n.xml cambricon
vcheck mlu synthetic-mlu370-2n.xml ""
expect_eq "CNDev, healthy: exit" 0 "$rc"
vcheck mlu synthetic-mlu370-2n.xml "cambricon 1 health 0"
expect_eq "CNDev, unhealthy card: exit" 80 "$rc"
expect_match "CNDev, unhealthy card: the line" \
	'^vigil: boards: health 0000:1a:00\.0: CNDev health: not healthy' "$out"
vcheck mlu synthetic-mlu370-2n.xml "cambricon 2 ecc.uncorrected 3"
expect_eq "CNDev, uncorrectable ECC: exit" 80 "$rc"
expect_match "CNDev, uncorrectable ECC: the line" \
	'^vigil: boards: ecc 0000:1b:00\.0: 3 uncorrectable ECC errors' "$out"

# The pre-check under mpirun: the node whose board waits for a reset fails.
printf '%s\n' "$BOARDS" > "$SCRATCH/s0"
printf '%s\nnvidia 0 remap.pending 1\n' "$BOARDS" > "$SCRATCH/s1"
out=$(timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none \
	-np 1 env VIGIL_NODE_NAME=n0 VIGIL_FAKE_VENDOR="$SCRATCH/s0" "$VIGIL" check $flags : \
	-np 1 env VIGIL_NODE_NAME=n1 VIGIL_FAKE_VENDOR="$SCRATCH/s1" "$VIGIL" check $flags 2>&1); rc=$?
expect_eq "mpirun: exit" 80 "$rc"
expect_match "mpirun: the node named" 'n1 \(rank 1\): boards: row-remap 0000:04:00\.0' "$out"
expect_match "mpirun: one of two" '1 of 2 nodes unhealthy' "$out"

finish
