# shellcheck shell=bash
# install_lib.sh - helpers of the install tests (install_destdir.sh,
# install_deb.sh), sourced after lib.sh and tests/slurm/cluster.sh.
#
#   inst_make ARGS...   make ARGS in the build tree (TOP_BUILDDIR), quietly,
#                       outside the suite's own make (no jobserver).
#   inst_dirs           the installation directories as configured
#                       (`make print-install-dirs`) into INST[name].
#   inst_files          the files `make install` installs, one absolute
#                       path a line, sorted, from INST.
#   inst_healthcheck WRAPPER   WRAPPER as slurmd's HealthCheckProgram on a
#                       two-node cluster, run every 2 s: a node whose fabric
#                       NIC eth1 goes down is drained with vigil's reason
#                       and resumed once eth1 is up.  The wrapper's settings
#                       must already name $SCRATCH/vigil.json (which this
#                       writes: eth1 required) as VIGIL_CONFIG, and no VIGIL:
#                       the wrapper runs the vigil installed with it.

: "${TOP_BUILDDIR:?TOP_BUILDDIR must name the build tree}"

inst_make() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP_BUILDDIR" "$@"
}

declare -A INST=()
inst_dirs() {
	local line
	while IFS= read -r line; do
		case $line in
		*=*) INST[${line%%=*}]=${line#*=} ;;
		esac
	done < <(inst_make print-install-dirs)
	[ -n "${INST[bindir]:-}" ] && [ -n "${INST[pythondir]:-}" ]
}

inst_files() {
	local p=${INST[pkgdatadir]} d=${INST[docdir]} m=${INST[mandir]}
	printf '%s\n' \
		"${INST[bindir]}/vigil" \
		"${INST[sbindir]}/vigil-healthcheck" \
		"${INST[sysconfdir]}/default/vigil-healthcheck" \
		"${INST[includedir]}/vigil.h" "${INST[includedir]}/vigil_version.h" \
		"${INST[pythondir]}/vigil_timing.py" \
		"$p/slurm/vigil.sbatch" "$p/slurm/vigil-healthcheck.default" \
		"$p/notify/mail.sh" "$p/notify/webhook.sh" \
		"$p/examples/train_sim.py" "$p/examples/ddp_train.py" \
		"$p/vigil.json.example" \
		"$m/man1/vigil.1" "$m/man5/vigil.conf.5" "$m/man8/vigil-healthcheck.8" \
		"$d/README" "$d/slurm.md" "$d/notify/README.md" "$d/examples/README.md" \
		"$d/python/README.md" | sort
}

inst_healthcheck() {
	local hc=$1 out rc
	echo '{"check": {"nics": {"required": ["eth1"]}}}' >"$SCRATCH/vigil.json"
	if ! sl_up 2 "HealthCheckProgram=$hc" "HealthCheckInterval=2"; then
		fail "the Slurm cluster did not come up"
		return 1
	fi
	# By hand on a node first, as slurmd runs it: no environment.
	out=$(sl_node_exec n1 env -i SLURMD_NODENAME=n1 "$hc" 2>&1); rc=$?
	expect_eq "$hc on a healthy node, as slurmd runs it: silent, 0" "0 " "$rc $out"

	tb_exec n2 ip link set eth1 down
	if sl_wait_node n2 'IDLE\+DRAIN|DRAINED|DRAINING' 30; then
		pass "slurmd ran $hc: n2 drained"
	else
		fail "n2 not drained: $(sl_log n2 | grep -i health | tail -3)"
	fi
	expect_match "n2's reason is vigil's, naming eth1" '^vigil: nics: .*eth1' "$(sl_node_field n2 Reason)"
	expect_match "slurmd logged the failed check" \
		'health_check failed: rc:80 output:vigil: nics: .*eth1' "$(sl_log n2)"
	expect_eq "n1 untouched" IDLE "$(sl_node_field n1 State)"
	tb_exec n2 ip link set eth1 up
	if sl_wait_node n2 IDLE 30; then pass "n2 resumed once healthy"; else fail "n2 not resumed"; fi
	sl_down || fail "the cluster left something behind"
}
