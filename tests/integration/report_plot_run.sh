#!/bin/bash
# vigil report --plot of a real job: 2 nodes under mpirun, 60 iterations
# with the default --summary-interval (one summary), the coordinator's
# per-node series in the event log and the report, the plot drawn with
# every iteration of each node and the summary's median, rendered to an
# image; a plot named .png refused with nothing written.
. "$(dirname "$0")/lib.sh"

if ! command -v rsvg-convert >/dev/null 2>&1; then
	echo "rsvg-convert not found: apt-get install librsvg2-bin" >&2
	exit 77
fi

# e2e 150.25 + 0..3 ms on both nodes alike (equal values), n1 20 ms slower
# from iteration 41 on
cat > "$SCRATCH/train.sh" <<'SH'
#!/bin/sh
i=1
while [ $i -le 60 ]; do
	e=$((150 + i % 4))
	[ "$RANK" = 1 ] && [ $i -gt 40 ] && e=$((e + 20))
	printf 'this iteration hardware time is 100 and e2e time is %d.25 ms.\n' $e
	i=$((i + 1))
	sleep 0.01
done
SH
chmod +x "$SCRATCH/train.sh"

EV="$SCRATCH/ev.jsonl"
out=$(timeout -k 5 120 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none \
	-np 1 env VIGIL_NODE_NAME=n0 "$VIGIL" run --precheck off --events "$EV" \
		--report "$SCRATCH/r.json" -- "$SCRATCH/train.sh" : \
	-np 1 env VIGIL_NODE_NAME=n1 "$VIGIL" run --precheck off -- "$SCRATCH/train.sh" 2>&1); rc=$?
expect_eq "job exit" 0 "$rc"
expect_eq "one series event per node" 2 "$(grep -c '"kind":"series"' "$EV")"
expect_eq "the report's series: every iteration of each node" "60 60 1" \
	"$(report "$SCRATCH/r.json" '" ".join(str(len(n["e2e_series"])) for n in r["performance"]["nodes"]) + " " + str(r["performance"]["detail"]["series_groups_per_point"])')"

summary=$("$VIGIL" report "$EV" --plot "$SCRATCH/x.svg"); rc=$?
expect_eq "report --plot exit" 0 "$rc"
median=$(printf '%s\n' "$summary" | sed -n 's/^e2e time: .*median \([0-9.]* ms\),.*/\1/p')
expect_eq "the summary's median, of every iteration" "152.250 ms" "$median"

# the SVG's elements: per node its points and markers, the legend's names,
# the median as the summary says it
got=$(python3 - "$SCRATCH/x.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
out = []
for g in root.iter("{http://www.w3.org/2000/svg}g"):
    if g.get("class") != "series":
        continue
    name = g.find("s:title", ns).text
    pts = g.find("s:polyline", ns).get("points").split()
    marks = g.find("s:g[@class='markers']", ns).findall("s:use", ns)
    out.append("%s:%d/%d" % (name, len(pts), len(marks)))
texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.text]
keys = sorted(t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
              if t.get("class") == "key")
med = [t for t in texts if t.startswith("median, all: ")]
print(" ".join(out), "|", keys, "|", med[0][len("median, all: "):] if med else None, "|",
      root.get("width"), root.get("height"))
PY
)
expect_eq "svg: 60 points and markers per node, legend, median" \
	"n0:60/60 n1:60/60 | ['n0 (151.750 ms)', 'n1 (152.750 ms)'] | $median | 960 740" "$got"

# rendered as an image: a PNG of the SVG's size, not blank
rsvg-convert -o "$SCRATCH/x.png" "$SCRATCH/x.svg"; rc=$?
expect_eq "renders" 0 "$rc"
got=$(PYTHONPATH="$(cd "$(dirname "$0")" && pwd)" python3 - "$SCRATCH/x.png" <<'PY'
import sys
from png_rows import read
w, h, bpp, rows = read(sys.argv[1])
# a plot on white has many distinct byte values
print(w, h, len(set(b"".join(rows))) > 16)
PY
)
expect_eq "png: 960x740 (the plot, the timeline below), drawn on" "960 740 True" "$got"

# a plot named .png: refused, usage status, nothing written
out=$("$VIGIL" report "$EV" --plot "$SCRATCH/job.png" 2>&1); rc=$?
expect_eq "png refused" 64 "$rc"
expect_match "refusal names .svg and the conversion" \
	"job\.svg.*rsvg-convert -o $SCRATCH/job\.png $SCRATCH/job\.svg" "$out"
[ ! -e "$SCRATCH/job.png" ] && pass "nothing written on refusal" || fail "job.png was written"

finish
