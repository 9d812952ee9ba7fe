// `npm run bench [-- --quick] [-- --markdown] [-- --json] [-- --only=generate,trigger,download,overhead,loop,queue,mcp] [-- --queue] [-- --mcp]`
// `npm run bench -- --n8n [--quick] [--n8n-sizes=20,100] [--n8n-concurrency=1,8] [--n8n-cpu-prof=<dir>] [--n8n-prof=<dir>] [--n8n-gc-stats=<dir>] [--n8n-runs=3] [--n8n-latency=500] [--n8n-backlog=10000] [--n8n-trigger-minutes=30] [--n8n-parts=batch,trigger,drain]
//   [--n8n-drain-backlogs=1000,10000,100000] [--n8n-drain-caps=100,1000] [--n8n-drain-images=12,40] [--n8n-drain-heap=320] [--n8n-drain-user=1000,10000]
//   [--n8n-parts=credentials --n8n-credentials-sessions=4 --n8n-credentials-base=4b01bcc --n8n-credentials-before=<tgz> --n8n-credentials-now=<tgz> --n8n-credentials-downloads=0]
//   [--n8n-parts=nightly --n8n-sizes=1000,10000 --n8n-latency=300 --n8n-concurrency=8 --n8n-nightly-batch=50 --n8n-nightly-builds=imagepack,http,lean,sub --n8n-nightly-progress=off,on --n8n-nightly-heap=0,320 --n8n-nightly-split=5 --n8n-nightly-semi-space=2 --n8n-nightly-report=<file.json>]
//   [--n8n-parts=durable --n8n-durable-sessions=2 --n8n-durable-base=8a9ff14 --n8n-durable-builds=with,without,stubbed --n8n-durable-calls=100 --n8n-durable-fills=0,1000,10000 --n8n-durable-states=bound,empty,off --n8n-durable-downloads=1]`:
// only the figures in a real n8n (n8n.bench.mjs, drain.bench.mjs).
// (gulp bench → node --import tsx test/bench/run.mjs). The launcher owns what the linted TypeScript
// may not touch: the clock, process memory, child processes, argv and printing. Progress goes to
// stderr, the table (or Markdown / JSON) to stdout. Nothing is written to the work tree.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { benchEnv } from './env.ts';
import { markdownTable, summary, textTable } from './figures.ts';
import { benchGenerate, benchOverhead } from './generate.bench.ts';
import { benchLoop } from './loop.bench.ts';
import { downloadFigures } from './download.bench.ts';
import { useFilesystemBinaryData } from '../harness/n8n.ts';
import { ImagePack } from '../../nodes/ImagePack/ImagePack.node.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const n8nMode = args.includes('--n8n');
const wanted = (name) => (only ? only.includes(name) : !n8nMode);
const log = (line) => process.stderr.write(`bench: ${line}\n`);
// In n8n the batch writes every image to disk: 4 MiB, about a 2K PNG photo, keeps 500 of them affordable.
// The nightly pattern alone (10,000 products): 0.25 MiB, about a 1K product photo.
const nightlyOnly = args.find((a) => a.startsWith('--n8n-parts='))?.slice(12) === 'nightly';
const imageMib = Number(args.find((a) => a.startsWith('--image-mib='))?.slice(12) ?? (nightlyOnly ? 0.25 : n8nMode ? 4 : quick ? 8 : 16));
const imageBytes = Math.round(imageMib * 1024 * 1024);

const children = new Set();
function startChild(script, childArgs, env = {}, nodeFlags = []) {
	const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', path.join(here, script), ...childArgs], {
		env: { ...process.env, ...env },
		stdio: ['pipe', 'pipe', 'inherit'],
	});
	children.add(child);
	child.on('exit', () => children.delete(child));
	return child;
}

function firstLine(child) {
	return new Promise((resolve, reject) => {
		const lines = readline.createInterface({ input: child.stdout });
		lines.once('line', (line) => resolve(JSON.parse(line)));
		child.once('exit', (code) => reject(new Error(`${child.spawnargs.join(' ')} exited with ${code} before answering`)));
	});
}

const started = performance.now();
const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'imagepack-bench-'));
const servers = startChild('servers.mjs', [], { BENCH_IMAGE_BYTES: String(imageBytes) });
const endpoints = await firstLine(servers);
log(`emulator ${endpoints.baseUrl} (child process ${servers.pid}), realistic file host ${endpoints.realisticBaseUrl}`);

const nodes = { ImagePack };
const triggerPath = path.join(here, '..', '..', 'nodes', 'ImagePack', 'ImagePackTrigger.node.ts');
if (fs.existsSync(triggerPath)) nodes.ImagePackTrigger = (await import('../../nodes/ImagePack/ImagePackTrigger.node.ts')).ImagePackTrigger;
const cpuMs = () => {
	const { user, system } = process.cpuUsage();
	return (user + system) / 1000;
};
const env = benchEnv({ clock: { now: () => performance.now(), cpuMs }, emulator: endpoints, quick, nodes, log });
// n8n 2.x runs with filesystem binary data by default: measure the node the way it runs there.
await useFilesystemBinaryData(path.join(storage, 'main'));

const figures = [];
try {
	if (wanted('generate')) figures.push(...(await benchGenerate(env)));
	if (wanted('trigger')) {
		const triggerModule = path.join(here, 'trigger.bench.ts');
		if (fs.existsSync(triggerModule) && nodes.ImagePackTrigger) {
			const { benchTrigger } = await import('./trigger.bench.ts');
			figures.push(...(await benchTrigger(env)));
		} else {
			log('trigger benchmarks skipped: the trigger node (or test/bench/trigger.bench.ts) does not exist yet');
		}
	}
	if (wanted('download')) {
		const realistic = endpoints.realisticBaseUrl;
		const files = (mib, tag) => Array.from({ length: 4 }, (_, i) => `/api/file/mib${mib}-${tag}-${i}.png`);
		const small = Math.max(1, Math.round(imageMib / 4));
		const runs = {};
		const measure = async (name, mode, baseUrl, fileUrls, warm = true) => {
			log(`download: ${name}`);
			await env.control.reset();
			const run = { mode, baseUrl, apiKey: endpoints.apiKey, storageDir: path.join(storage, name.replace(/\W+/g, '-')), images: 4 };
			const warmupFileUrl = warm ? '/api/file/small-warmup.png' : undefined;
			const child = startChild('download-child.mjs', [JSON.stringify({ run, warmupFileUrl, fileUrls, sampleMs: 5 })], {}, ['--expose-gc']);
			const measurement = await firstLine(child);
			await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve()));
			runs[name] = measurement;
			return measurement;
		};
		await measure('emulator', 'generate', endpoints.baseUrl, undefined, false);
		await measure('bare', 'bare', realistic, files(imageMib, 'bare'));
		await measure('bareSmall', 'bare', realistic, files(small, 'bare'));
		await measure('generate', 'generate', realistic, undefined);
		await measure('download', 'download', realistic, files(imageMib, 'dl'));
		await measure('downloadSmall', 'download', realistic, files(small, 'dl'));
		figures.push(
			...downloadFigures([
				{ label: 'emulator PNGs, Generate n=4 4K', measurement: runs.emulator, meaningful: false },
				{ label: 'bare node:http client, 4 files piped to disk', measurement: runs.bare, meaningful: true, reference: true },
				{ label: 'Generate n=4 4K, downloadImages', measurement: runs.generate, meaningful: true, bare: runs.bare },
				{ label: '4 × Download File', measurement: runs.download, meaningful: true, bare: runs.bare },
				{ label: `4 × Download File, ${small} MiB images`, measurement: runs.downloadSmall, meaningful: true, bare: runs.bareSmall },
			]),
		);
	}
	if (wanted('overhead')) figures.push(...(await benchOverhead(env)));
	if (wanted('loop')) figures.push(...(await benchLoop(env)));
	// Opt-in (starts PostgreSQL, Redis and three n8n processes): --queue or --only=queue.
	if (args.includes('--queue') || only?.includes('queue')) {
		const { benchQueue } = await import('./queue.bench.mjs');
		figures.push(...(await benchQueue({ log, quick })));
	}
	// Opt-in (starts n8n and waits for a 90 s generation over MCP): --mcp or --only=mcp.
	if (args.includes('--mcp') || only?.includes('mcp')) {
		const { benchMcp } = await import('./mcp.bench.mjs');
		figures.push(...(await benchMcp({ log })));
	}
	if (n8nMode) {
		const { benchN8n } = await import('./n8n.bench.mjs');
		const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
		const sizes = option('n8n-sizes')?.split(',').map(Number);
		const concurrencies = option('n8n-concurrency')?.split(',').map(Number);
		const cpuProfDir = option('n8n-cpu-prof');
		const profDir = option('n8n-prof');
		const gcStatsDir = option('n8n-gc-stats');
		const runs = option('n8n-runs') === undefined ? undefined : Number(option('n8n-runs'));
		const latencyMs = option('n8n-latency') === undefined ? undefined : Number(option('n8n-latency'));
		const backlog = option('n8n-backlog') === undefined ? undefined : Number(option('n8n-backlog'));
		const parts = option('n8n-parts')?.split(',');
		const triggerTimeoutMs = option('n8n-trigger-minutes') === undefined ? undefined : Number(option('n8n-trigger-minutes')) * 60_000;
		const numbers = (name) => (option(name) === undefined ? undefined : option(name).split(',').filter(Boolean).map(Number));
		const drain = {
			backlogs: numbers('n8n-drain-backlogs'),
			caps: numbers('n8n-drain-caps'),
			images: numbers('n8n-drain-images'),
			heapMiB: numbers('n8n-drain-heap')?.[0] ?? undefined,
			userBacklogs: numbers('n8n-drain-user'),
			pollSeconds: numbers('n8n-drain-poll')?.[0],
		};
		const durable = {
			sessions: numbers('n8n-durable-sessions')?.[0],
			base: option('n8n-durable-base'),
			builds: option('n8n-durable-builds')?.split(',').filter(Boolean),
			rawCalls: numbers('n8n-durable-calls')?.[0],
			rawFills: numbers('n8n-durable-fills'),
			states: option('n8n-durable-states')?.split(',').filter(Boolean),
			downloads: option('n8n-durable-downloads') === undefined ? undefined : !['0', 'off', 'false'].includes(option('n8n-durable-downloads')),
		};
		const credentials = {
			sessions: numbers('n8n-credentials-sessions')?.[0],
			base: option('n8n-credentials-base'),
			before: option('n8n-credentials-before'),
			now: option('n8n-credentials-now'),
			downloads: option('n8n-credentials-downloads') === undefined ? undefined : !['0', 'off', 'false'].includes(option('n8n-credentials-downloads')),
		};
		const nightly = {
			builds: option('n8n-nightly-builds')?.split(',').filter(Boolean),
			progress: option('n8n-nightly-progress')?.split(',').filter(Boolean).map((p) => p === 'on'),
			batch: numbers('n8n-nightly-batch')?.[0],
			heaps: numbers('n8n-nightly-heap'),
			report: option('n8n-nightly-report'),
			split: numbers('n8n-nightly-split')?.[0],
			semiSpace: numbers('n8n-nightly-semi-space')?.[0],
		};
		figures.push(...(await benchN8n(env, { endpoints, storage, quick, imageBytes, sizes, concurrencies, latencyMs, backlog, triggerTimeoutMs, parts, cpuProfDir, profDir, gcStatsDir, runs, drain, durable, credentials, nightly })));
	}
} finally {
	servers.kill('SIGTERM');
	fs.rmSync(storage, { recursive: true, force: true });
}

const totalSeconds = (performance.now() - started) / 1000;
const counts = summary(figures);
const machine = `${os.cpus().length} cores (${os.cpus()[0]?.model?.trim() ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.arch()}`;
if (args.includes('--json')) {
	process.stdout.write(`${JSON.stringify({ quick, machine, totalSeconds, summary: counts, figures }, null, 2)}\n`);
} else if (args.includes('--markdown')) {
	process.stdout.write(`${markdownTable(figures)}\n\nMachine: ${machine}. \`npm run bench${quick ? ' -- --quick' : ''}\`, ${totalSeconds.toFixed(0)} s.\n`);
} else {
	process.stdout.write(`${textTable(figures)}\n\nMachine: ${machine}; ${totalSeconds.toFixed(0)} s.\n`);
}
process.stderr.write(`bench: ${counts.pass} pass, ${counts.miss} miss, ${counts.info} info\n`);
// Keep-alive sockets of n8n's HTTP agents would hold the process open.
process.exit(0);
