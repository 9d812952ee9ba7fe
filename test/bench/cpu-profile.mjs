// `node test/bench/cpu-profile.mjs <file> [--top=25] [--last=<seconds>] [--callers=<function> [--depth=3]]`: where a V8 CPU profile (node
// --cpu-prof, written by `npm run bench -- --n8n --n8n-cpu-prof=<dir>` or `--n8n-prof=<dir>`) spent
// its time, or where a sampled heap profile (`.heapprofile`, written by `--n8n-prof=<dir>`)
// allocated its bytes: self time (or bytes) summed by package (n8n-core, axios, this package, node
// internals, …) and the functions with the most; --last keeps only the samples of a CPU profile's
// last seconds (the measured work, not n8n's start); --callers shows the call paths (--depth frames
// up, default three) that spent a function's self time or allocated its bytes. Plain ESM, no dependencies: it reads
// the JSON V8 writes.
import fs from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
if (!file) {
	console.error('usage: node test/bench/cpu-profile.mjs <file.cpuprofile|file.heapprofile> [--top=25]');
	process.exit(2);
}
const top = Number(rest.find((a) => a.startsWith('--top='))?.slice(6) ?? 25);
const callersOf = rest.find((a) => a.startsWith('--callers='))?.slice(10);
const depth = Number(rest.find((a) => a.startsWith('--depth='))?.slice(8) ?? 3);
const lastUs = Number(rest.find((a) => a.startsWith('--last='))?.slice(7) ?? Infinity) * 1e6;
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
// A heap profile is a tree of allocation sites with their sampled bytes; a CPU profile a flat list of nodes and samples.
const heap = Boolean(profile.head);

const nodes = [];
const selfUs = new Map(); // self time in µs, or self bytes of a heap profile
if (heap) {
	for (const stack = [profile.head]; stack.length; ) {
		const node = stack.pop();
		nodes.push({ id: node.id, callFrame: node.callFrame, children: node.children.map((child) => child.id) });
		selfUs.set(node.id, node.selfSize);
		stack.push(...node.children);
	}
} else {
	nodes.push(...profile.nodes);
	// Self time per node: each sample names the node that was on top of the stack, timeDeltas the time since the previous sample.
	let at = profile.startTime;
	for (let i = 0; i < profile.samples.length; i++) {
		at += profile.timeDeltas[i] ?? 0;
		if (profile.endTime - at > lastUs) continue;
		const id = profile.samples[i];
		selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
	}
}

/** The package a script belongs to: the last node_modules segment, this package's dist, or node's internals. */
function packageOf(url) {
	if (!url) return '(program, GC, idle)';
	if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
	const parts = url.replace(/^file:\/\//, '').split('/');
	const at = parts.lastIndexOf('node_modules');
	if (at >= 0) return parts[at + 1].startsWith('@') ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1];
	return parts.slice(-3).join('/');
}

const byPackage = new Map();
const byFunction = new Map();
let totalUs = 0;
for (const node of nodes) {
	const us = selfUs.get(node.id) ?? 0;
	if (!us) continue;
	totalUs += us;
	const { functionName, url, lineNumber } = node.callFrame;
	const name = functionName || '(anonymous)';
	const pkg = ['(idle)', '(program)', '(garbage collector)'].includes(name) ? name : packageOf(url);
	byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
	const key = `${name}  ${url ? `${url.replace(/^.*node_modules\//, '')}:${lineNumber + 1}` : ''}`;
	byFunction.set(key, (byFunction.get(key) ?? 0) + us);
}

const busyUs = totalUs - (byPackage.get('(idle)') ?? 0);
const amount = (us) => (heap ? `${(us / 2 ** 20).toFixed(1).padStart(9)} MiB` : `${(us / 1000).toFixed(0).padStart(9)} ms`);
const row = (us, label) => `${amount(us)} ${((100 * us) / busyUs).toFixed(1).padStart(5)} %  ${label}`;
const sorted = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]);
if (heap) console.log(`${file}: ${(totalUs / 2 ** 20).toFixed(1)} MiB allocated (sampled, collected objects included)\n`);
else console.log(`${file}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (percentages of busy)\n`);
console.log(heap ? 'Allocated by package:' : 'Self time by package:');
for (const [pkg, us] of sorted(byPackage).slice(0, top)) if (pkg !== '(idle)') console.log(row(us, pkg));
console.log(`\nTop ${top} functions by ${heap ? 'bytes allocated' : 'self time'}:`);
for (const [key, us] of sorted(byFunction).slice(0, top + 1)) if (!key.startsWith('(idle)')) console.log(row(us, key));

if (callersOf) {
	const parentOf = new Map();
	for (const node of nodes) for (const child of node.children ?? []) parentOf.set(child, node);
	const paths = new Map();
	for (const node of nodes) {
		const us = selfUs.get(node.id) ?? 0;
		if (!us || node.callFrame.functionName !== callersOf) continue;
		const frames = [];
		for (let up = parentOf.get(node.id); up && frames.length < depth; up = parentOf.get(up.id)) {
			frames.push(`${up.callFrame.functionName || '(anonymous)'} ${up.callFrame.url.replace(/^.*node_modules\//, '')}:${up.callFrame.lineNumber + 1}`);
		}
		const key = frames.join(' ← ');
		paths.set(key, (paths.get(key) ?? 0) + us);
	}
	console.log(`\nCallers of ${callersOf}:`);
	for (const [key, us] of sorted(paths).slice(0, top)) console.log(row(us, key));
}
