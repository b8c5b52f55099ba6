/**
 * Where a proxy's resident pages are at its peak: samples `/proc/<pid>/smaps` of every process whose
 * command line holds `match` (a checkout's path: the bench's proxies and floor pipes started from it)
 * every `interval` ms for `seconds`, sums each sample's Rss by mapping (the deno executable's file
 * pages, malloc's main-arena `[heap]`, anonymous memory: V8's heaps and code, other malloc arenas,
 * thread stacks; other files), and prints, per process, the sample of highest Rss; with a fourth
 * argument `series`, also every sample as it is taken (seconds since start, pid, role, MiB by kind).
 * Run it beside a bench, e.g.
 * `./dev deno run -A tests/bench/proxy_pair/smaps_sampler.ts /work/wt/x 60 250 &`
 * then `BENCH_PROXY_ROOT=/work/wt/x ./dev deno run -A tests/bench/proxy_pair/main.ts 1 5`. MiB.
 *
 * @module
 */

type Sample = { total: number; exe: number; heap: number; anon: number; other: number };

/** The role of a process, from its command line; undefined for processes that are not sampled. */
function roleOf(cmdline: string): string | undefined {
  const proxy = /proxy\/main\.(ts|js)/.exec(cmdline);
  if (proxy) {
    const entry = proxy[1] === "js" ? " (bundle)" : "";
    return (cmdline.includes("--outbound") ? "client proxy" : "server proxy") + entry;
  }
  const floor = /floors\/(\w+)\.ts\S*\s+(\w+)/.exec(cmdline);
  return floor ? `${floor[1]} ${floor[2]}` : undefined;
}

/** One sample of `/proc/<pid>/smaps`, KiB summed by mapping kind; undefined when the process is gone. */
async function sample(pid: number, exe: string): Promise<Sample | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(`/proc/${pid}/smaps`);
  } catch {
    return undefined;
  }
  const s: Sample = { total: 0, exe: 0, heap: 0, anon: 0, other: 0 };
  let kind: keyof Sample = "other";
  for (const line of text.split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1];
      kind = name === exe
        ? "exe"
        : name === "[heap]"
        ? "heap"
        : name === "" || name.startsWith("[anon")
        ? "anon"
        : "other";
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) {
      s[kind] += Number(rss[1]);
      s.total += Number(rss[1]);
    }
  }
  return s;
}

const [match, seconds = "60", interval = "250", mode] = Deno.args;
if (!match) throw new Error("usage: smaps_sampler.ts <command-line substring> [seconds] [interval ms]");
const mib = (kb: number) => (kb / 1024).toFixed(1);
const peaks = new Map<number, { role: string; peak: Sample; first: Sample }>();
const start = Date.now();
const end = start + Number(seconds) * 1000;
while (Date.now() < end) {
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    let cmdline: string;
    let exe: string;
    try {
      cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
      exe = Deno.readLinkSync(`/proc/${pid}/exe`);
    } catch {
      continue;
    }
    const role = cmdline.includes(match) ? roleOf(cmdline) : undefined;
    if (!role) continue;
    const s = await sample(pid, exe);
    if (!s) continue;
    if (mode === "series") {
      console.log(
        `${((Date.now() - start) / 1000).toFixed(1)} ${pid} ${role}: total ${mib(s.total)} exe ${
          mib(s.exe)
        } heap ${mib(s.heap)} anon ${mib(s.anon)}`,
      );
    }
    const known = peaks.get(pid);
    if (!known) peaks.set(pid, { role, peak: s, first: s });
    else if (s.total > known.peak.total) known.peak = s;
  }
  await new Promise((r) => setTimeout(r, Number(interval)));
}
console.log("| pid | process | first sample | peak | deno executable | [heap] | anonymous | other |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const [pid, { role, peak, first }] of peaks) {
  console.log(
    `| ${pid} | ${role} | ${mib(first.total)} | ${mib(peak.total)} | ${mib(peak.exe)} | ${mib(peak.heap)} | ${
      mib(peak.anon)
    } | ${mib(peak.other)} |`,
  );
}
