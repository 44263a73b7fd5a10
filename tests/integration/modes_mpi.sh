#!/bin/bash
# Launch modes against the real MPI launchers: a training that calls
# MPI_Init itself runs as an MPI singleton under every mode (the agents'
# own job identity stays out of its environment) and the job ends; the
# manual's own mpirun example runs in Horovod mode as root (the user's and
# the site's Open MPI settings are kept, mpirun's own tmpdir is not), once,
# also behind bash -c and env, and a script that only names mpirun is
# prefixed; the Open MPI and MPICH hostfiles are read by the real mpirun
# and mpiexec.hydra; vigil's variables in the command are expanded, never
# inside a shell's script; DeepSpeed and Horovod (not packaged in Debian)
# against their documented contracts.
. "$(dirname "$0")/lib.sh"

: "${MPI_TRAIN:?MPI_TRAIN must name tests/integration/mpi_train}"
if ! command -v mpiexec.hydra >/dev/null 2>&1; then
	echo "SKIP: mpiexec.hydra (Debian's mpich) not found"
	exit 77
fi
PY=/usr/bin/python3
np=2
# DeepSpeed mode writes /job/hostfile where it can: a /job this test
# created goes at the end.
job_existed=no; [ -e /job ] && job_existed=yes
cleanup_job() { [ "$job_existed" = no ] && [ "$(id -u)" = 0 ] && rm -rf /job; cleanup_scratch; }
trap cleanup_job EXIT
# Every mpirun here is bounded: a training that hangs the agents' MPI_Finalize
# must fail the test, not hang it.  The agents on this one host get names
# of their own (a hostfile names a host once: vigil refuses two agents of
# one name in the hostfile modes); both are this host to mpiexec.hydra.
names=("$(hostname)" localhost)
vrun() {
	local args=() i
	for ((i = 0; i < np; i++)); do
		[ "$i" -eq 0 ] || args+=(:)
		args+=(-np 1 env VIGIL_NODE_NAME="${names[i]}" "$VIGIL" run --precheck off \
			--run-dir "$SCRATCH/rd" "$@")
	done
	timeout -k 5 90 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "${args[@]}"
}
# made here, so vigil keeps it after each job: the tests read the hostfiles
mkdir -m 0700 "$SCRATCH/rd"

# 3. An MPI training under every mode: a singleton on each node.
for mode in single pytorch deepspeed tensorflow; do
	n=$np; [ "$mode" = single ] && n=1
	out=$(np=$n vrun --mode "$mode" -- "$MPI_TRAIN" 2>"$SCRATCH/err"); rc=$?
	expect_eq "$mode: MPI training exit (no hang)" 0 "$rc"
	expect_eq "$mode: MPI_Init is a singleton on each of $n nodes" "$n" \
		"$(printf '%s\n' "$out" | grep -c '^mpi rank 0 of 1 sum 1$')"
done
# Horovod mode: the manual's prefix starts one job of every slot.  Open
# MPI takes two hostfile lines for one host as an error, so the Open MPI
# runs use one agent on a node of 2 slots (the Pascal topology); the
# MPICH run below uses two agents.
hvrun() { np=1 vrun --mode horovod --topology "$PASCAL" "$@"; }
out=$(hvrun -- "$MPI_TRAIN" 2>"$SCRATCH/err"); rc=$?
expect_eq "horovod: prefixed MPI training exit" 0 "$rc"
expect_eq "horovod: one job of 2 ranks" "mpi rank 0 of 2 sum 2,mpi rank 1 of 2 sum 2" \
	"$(printf '%s\n' "$out" | grep '^mpi rank' | sort | paste -sd, -)"

# mpi4py (Debian's python3-mpi4py), the way a Python training uses MPI.
out=$(vrun --mode pytorch -- $PY -c 'from mpi4py import MPI; c = MPI.COMM_WORLD; print("py", c.Get_rank(), c.Get_size(), flush=True)' 2>"$SCRATCH/err"); rc=$?
expect_eq "mpi4py training exit" 0 "$rc"
expect_eq "mpi4py: a singleton on each node" "$np" "$(printf '%s\n' "$out" | grep -c '^py 0 1$')"

# 2. The manual's own mpirun command, as root without --allow-run-as-root:
# it needs OMPI_ALLOW_RUN_AS_ROOT* and the site's OMPI_MCA_* (lib.sh's
# loopback settings) kept, and is run once, by node rank 0, unchanged.
manual="mpirun -np 2 -bind-to none -map-by slot -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH -x PATH -mca pml ob1 -mca btl ^openib $MPI_TRAIN"
for form in plain bash env; do
	case $form in
	plain) out=$(hvrun -- $manual 2>"$SCRATCH/err"); rc=$? ;;
	bash) out=$(hvrun -- bash -c "$manual" 2>"$SCRATCH/err"); rc=$? ;;
	env) out=$(hvrun -- env X=1 $manual 2>"$SCRATCH/err"); rc=$? ;;
	esac
	expect_eq "horovod, manual's mpirun ($form): exit" 0 "$rc"
	expect_eq "horovod, manual's mpirun ($form): one job of 2 ranks, not wrapped again" \
		"mpi rank 0 of 2 sum 2,mpi rank 1 of 2 sum 2" \
		"$(printf '%s\n' "$out" | grep '^mpi rank' | sort | paste -sd, -)"
done

# The Open MPI hostfile, read by the real mpirun through
# OMPI_MCA_orte_default_hostfile: one line per node, "host slots=N".
host=$(hostname)
out=$(hvrun -- sh -c 'cat "$OMPI_MCA_orte_default_hostfile"; echo "iface=$HYDRA_IFACE"; mpirun --display-allocation -np 1 true' 2>&1); rc=$?
expect_eq "Open MPI hostfile run exit" 0 "$rc"
expect_eq "Open MPI hostfile lines" "$host slots=2" "$(printf '%s\n' "$out" | grep '^[^ ]* slots=2$')"
expect_match "mpirun read it" "$host: flags=.*slots=2" "$out"
expect_match "HYDRA_IFACE as the manual says" '^iface=eth0$' "$out"

# The MPICH hostfile, read by the real mpiexec.hydra through
# HYDRA_HOST_FILE ("host:N"); a site's HYDRA_IFACE (here lo) is kept.  Two
# agents, one command: only node rank 0 runs it.
out=$(HYDRA_IFACE=lo vrun --mode horovod -- mpiexec.hydra -n 2 sh -c 'echo "hydra $PMI_RANK of $PMI_SIZE on $(hostname) via $HYDRA_IFACE"' 2>&1); rc=$?
expect_eq "MPICH hostfile run exit" 0 "$rc"
expect_eq "mpiexec.hydra started 2 ranks from the hostfile" "hydra 0 of 2 on $host via lo,hydra 1 of 2 on $host via lo" \
	"$(printf '%s\n' "$out" | grep '^hydra ' | sort | paste -sd, -)"
expect_eq "MPICH hostfile content" "$host:1,localhost:1" "$(paste -sd, "$SCRATCH/rd/mpich_hostfile")"

# Horovod's own host parser (horovod/runner/common/util/hosts.py,
# parse_host_files: the first word, then what follows "=") reads the Open
# MPI hostfile as "host:slots" - Horovod is not in Debian: its documented
# contract, applied to the file vigil wrote.
parsed=$(while read -r line; do set -- $line; printf '%s:%s\n' "$1" "${line#*=}"; done < "$SCRATCH/rd/hostfile" | paste -sd, -)
expect_eq "Horovod's parser reads the hostfile" "$host:1,localhost:1" "$parsed"
# horovodrun without hosts would run on localhost only: it gets the hostfile.
out=$(vrun --mode horovod --dry-run -- horovodrun -np 2 python train.py 2>&1)
expect_match "horovodrun gets --hostfile" "command: horovodrun --hostfile=$SCRATCH/rd/hostfile -np 2 python train.py" "$out"

# 5. vigil's variables in the command's words: the manual's torchrun
# example runs as printed (here echoed by a stand-in launcher).
out=$(vrun --mode pytorch -- 'echo torchrun --nnodes ${WORLD_SIZE} --nproc_per_node ${SLOTS} --node_rank ${RANK} --master_addr ${MASTER_ADDR} --master_port ${MASTER_PORT} train.py' 2>"$SCRATCH/err"); rc=$?
expect_eq "expanded command exit" 0 "$rc"
expect_eq "expanded on each node" "0 1" "$(printf '%s\n' "$out" | awk '/^torchrun /{print $7}' | sort | paste -sd' ' -)"
expect_match "values filled in" '^torchrun --nnodes 2 --nproc_per_node 1 --node_rank [01] --master_addr [^ $]+ --master_port [0-9]+ train.py$' "$out"

# ... but never inside a shell's script: there '$RANK' in single quotes,
# RANK=... and a loop over WORLD_SIZE are the shell's, and the values are
# in its environment.  The script gives the answers bash gives alone, with
# the shell named in each of the ways users write it.
script='echo '"'"'$RANK'"'"' is $RANK of $WORLD_SIZE; RANK=$((RANK+10)); echo $RANK; for WORLD_SIZE in a b; do echo $WORLD_SIZE; done'
want=$(RANK=0 WORLD_SIZE=1 bash -c "$script")
for sh in "bash -c" "/bin/bash -c" "bash -lc" "bash -e -c" "sh -c" "dash -c" "env X=1 bash -c"; do
	out=$(np=1 vrun --mode single -- $sh "$script" 2>"$SCRATCH/err"); rc=$?
	expect_eq "$sh SCRIPT: exit" 0 "$rc"
	expect_eq "$sh SCRIPT: the shell's own answers" "$want" "$out"
done

# Horovod mode: a launcher is recognised as a command only.  An echo that
# names mpirun launches nothing: the manual's prefix starts one job of
# every slot.
out=$(hvrun -- bash -c "echo mpirun; $MPI_TRAIN" 2>"$SCRATCH/err"); rc=$?
expect_eq "horovod, a script that echoes mpirun: exit" 0 "$rc"
expect_eq "horovod, a script that echoes mpirun: prefixed, one job of 2 ranks" \
	"mpi rank 0 of 2 sum 2,mpi rank 1 of 2 sum 2" \
	"$(printf '%s\n' "$out" | grep '^mpi rank' | sort | paste -sd, -)"
# The outer mpirun gives every agent OMPI_MCA_orte_tmpdir_base, its own
# default unless the user set one: the training (and an mpirun in it,
# which would force it on every remote daemon) gets only the user's.
tmpdir_of() { np=1 vrun --mode single -- sh -c 'echo "tmpdir=${OMPI_MCA_orte_tmpdir_base-unset}"' 2>"$SCRATCH/err"; }
expect_eq "mpirun's own orte_tmpdir_base stays out" "tmpdir=unset" "$(tmpdir_of)"
mkdir "$SCRATCH/tmpbase"
expect_eq "the user's orte_tmpdir_base is kept" "tmpdir=$SCRATCH/tmpbase" \
	"$(OMPI_MCA_orte_tmpdir_base="$SCRATCH/tmpbase" tmpdir_of)"

# 1. DeepSpeed is not in Debian: a stand-in `deepspeed` that does what
# DeepSpeed's documentation says of its no-SSH mode (getting-started
# tutorial, "Launching without passwordless SSH"; launcher/runner.py and
# launch.py): --hostfile (hostfile "host slots=N"), --no_ssh, --node_rank,
# --master_addr, --master_port; this node's slots processes, ranks
# numbered across the hostfile in its order, WORLD_SIZE the sum of slots,
# --local_rank=N to the script.  Two nodes of 2 slots must make one job
# of 4 processes.
mkdir -p "$SCRATCH/bin"
cat > "$SCRATCH/bin/deepspeed" <<'PY'
#!/usr/bin/python3
import argparse, os, re, subprocess, sys
p = argparse.ArgumentParser()
p.add_argument("-H", "--hostfile", default="/job/hostfile")
p.add_argument("--no_ssh", action="store_true")
p.add_argument("--node_rank", type=int, default=-1)
p.add_argument("--master_addr", default="")
p.add_argument("--master_port", type=int, default=29500)
p.add_argument("user_script")
p.add_argument("user_args", nargs=argparse.REMAINDER)
a = p.parse_args()
pool = []
for line in open(a.hostfile):
    m = re.search(r"^(\S+)\s+slots=(\d+)", line.strip())
    if line.strip() and not line.startswith("#"):
        if not m:
            sys.exit("bad hostfile line: " + line)
        pool.append(int(m.group(2)))
if not a.no_ssh or not 0 <= a.node_rank < len(pool) or not a.master_addr:
    sys.exit("would launch over pdsh (not the no-SSH mode): %r" % sys.argv)
first = sum(pool[:a.node_rank])
procs = []
for local in range(pool[a.node_rank]):
    env = dict(os.environ, RANK=str(first + local), LOCAL_RANK=str(local), WORLD_SIZE=str(sum(pool)),
               MASTER_ADDR=a.master_addr, MASTER_PORT=str(a.master_port))
    procs.append(subprocess.Popen([sys.executable, "-u", a.user_script, "--local_rank=%d" % local] + a.user_args, env=env))
sys.exit(max(p.wait() for p in procs))
PY
chmod +x "$SCRATCH/bin/deepspeed"
printf 'import os, sys\nprint("ds rank %%s of %%s master %%s:%%s args %%s" %% (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], " ".join(sys.argv[1:])), flush=True)\n' > "$SCRATCH/ds_train.py"
out=$(PATH="$SCRATCH/bin:$PATH" vrun --mode deepspeed --topology "$PASCAL" -- \
	deepspeed "$SCRATCH/ds_train.py" --deepspeed --deepspeed_config ds_config.json 2>"$SCRATCH/err"); rc=$?
expect_eq "deepspeed: exit" 0 "$rc"
# (the processes of a node share its terminal: lines may run together)
ds=$(printf '%s\n' "$out" | grep -o 'ds rank [0-9]* of [0-9]* master [^ ]*')
expect_eq "deepspeed: one job of 2 nodes x 2 slots" "0 1 2 3" \
	"$(printf '%s\n' "$ds" | awk '{print $3}' | sort -n | paste -sd' ' -)"
expect_eq "deepspeed: one world size" "4" "$(printf '%s\n' "$ds" | awk '{print $5}' | sort -u)"
expect_eq "deepspeed: one master" 1 "$(printf '%s\n' "$ds" | awk '{print $7}' | sort -u | wc -l)"
expect_match "deepspeed: the script's own arguments" 'args --local_rank=[01] --deepspeed --deepspeed_config ds_config.json' "$out"
expect_eq "deepspeed: the job's hostfile" "$host slots=2,localhost slots=2" "$(paste -sd, "$SCRATCH/rd/hostfile")"
if [ "$(id -u)" = 0 ] && [ "$job_existed" = no ]; then
	# root on a node without /job: the hostfile also where DeepSpeed looks
	expect_eq "deepspeed: /job/hostfile" "$host slots=2,localhost slots=2" "$(paste -sd, /job/hostfile 2>&1)"
fi
# /job not private to the caller: not written there, said so, the job runs.
if [ "$(id -u)" != 0 ] || [ "$job_existed" = yes ]; then
	pass "deepspeed: /job exists or we are not root: its check is skipped"
fi

# KEY=VALUE before the command: the suggested form keeps PyTorch mode's launcher.
out=$("$VIGIL" run --mode pytorch --precheck off -- KEY=VALUE python3 train.py 2>&1); rc=$?
expect_eq "KEY=VALUE refused as a usage error" 64 "$rc"
expect_match "the env form suggested" '-- env KEY=VALUE python3 train.py' "$out"
out=$("$VIGIL" run --mode pytorch --precheck off --dry-run -- env KEY=VALUE python3 train.py 2>&1)
expect_match "the env form keeps the launcher" 'command: env KEY=VALUE python3 -m torch.distributed.launch --nproc_per_node=1 ' "$out"

finish
