/**
 * Benchmark 6 (issue 51): the package's own part of the README's nightly pattern, apart from n8n's.
 * Generate runs as Loop Over Items' batches of 50 in one execution of n8n-core's engine (the
 * harness: its node context, run data and the stand-in of n8n's deduplication store carried from
 * batch to batch), Concurrency 8, no generation latency and no downloads, so that what is measured
 * is what the node does per item: its CPU in each batch (the emulator runs in another process), its
 * store calls, what it keeps in the execution (its node context) and in the store's rows. At 1,000
 * and 10,000 products: the package's part is flat when an item at 10,000 costs what one at 1,000
 * does, and the last batches what the first do. n8n's own growth (progress saves, run data) is
 * measured in a real n8n (`--n8n --n8n-parts=nightly`).
 */
import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import {
	claimedCount,
	clearDeduplicationStore,
	recordedCount,
	storeCalls,
} from '../harness/deduplication';
import { runInEngine } from '../harness/engine';
import type { BenchEnv } from './env';
import type { Figure } from './figures';
import { figure } from './figures';

const BATCH = 50;

interface Batch {
	cpuMs: number;
	wallMs: number;
}

interface LoopRun {
	products: number;
	/** Items per run of the node. */
	size: number;
	batches: Batch[];
	storeCalls: number;
	/** The node's context data at the end, as n8n saves it (JSON), per product. */
	contextBytes: number;
	/** Values the store's rows hold at the end (the claims' row, the node's row of paid sends). */
	rows: { claims: number; sends: number };
}

const batchesOf = (products: number, size = BATCH): INodeExecutionData[][] =>
	Array.from({ length: Math.ceil(products / size) }, (_, batch) =>
		Array.from({ length: Math.min(size, products - batch * size) }, (_, index) => ({
			json: { sku: `SKU-${batch * size + index}`, title: `Product ${batch * size + index}` },
		})),
	);

/**
 * What any node reading a prompt per item costs in the same engine (n8n's part: expression, run
 * data, collections of a heap that holds the execution), the floor Generate's figures sit on.
 */
class PromptReader implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Prompt Reader',
		name: 'promptReader',
		group: ['transform'],
		version: 1,
		description: 'Reads the prompt of each item',
		defaults: { name: 'Prompt Reader' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		properties: [{ displayName: 'Prompt', name: 'prompt', type: 'string', default: '' }],
		usableAsTool: true,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [
			this.getInputData().map((item, index) => ({
				json: { sku: item.json.sku, prompt: this.getNodeParameter('prompt', index) as string },
				pairedItem: { item: index },
			})),
		];
	}
}

const PROMPT = '=Product photo of {{ $json.title }} ({{ $json.sku }}), white background';

/**
 * `products` in batches of `size` (the loop), or all in one run of the node (`size` = products);
 * `control`: the prompt reader instead of Generate.
 */
async function loopRun(
	env: BenchEnv,
	products: number,
	{ size = BATCH, control = false } = {},
): Promise<LoopRun> {
	await env.control.reset();
	clearDeduplicationStore();
	const nodeType = control ? new PromptReader() : new env.nodes.ImagePack();
	const execute = nodeType.execute!;
	const batches: Batch[] = [];
	const cpu = env.clock.cpuMs;
	nodeType.execute = async function (this: never) {
		const started = { wall: env.clock.now(), cpu: cpu() };
		const output = await execute.call(this);
		batches.push({ wallMs: env.clock.now() - started.wall, cpuMs: cpu() - started.cpu });
		return output;
	} as typeof execute;
	const before = storeCalls.record + storeCalls.remove;
	const run = await runInEngine({
		nodeType,
		parameters: control
			? { prompt: PROMPT }
			: {
					resource: 'image',
					operation: 'generate',
					prompt: PROMPT,
					model: 'nano-banana-2',
					ratio: '1:1',
					resolution: '1K',
					options: { concurrency: 8, downloadImages: false },
				},
		credentials: env.credentials,
		runs: batchesOf(products, size),
		errorOutput: true,
	});
	const failed = run.run.data.resultData.runData[
		Object.keys(run.run.data.resultData.runData)[0]!
	]!.filter((task) => (task.data?.main?.[1]?.length ?? 0) > 0 || task.error);
	if (batches.length !== Math.ceil(products / size) || failed.length) {
		throw new Error(`loop bench: ${batches.length} batches ran, ${failed.length} with errors`);
	}
	return {
		products,
		size,
		batches,
		storeCalls: storeCalls.record + storeCalls.remove - before,
		contextBytes: JSON.stringify(run.nodeContext).length,
		rows: { claims: claimedCount(), sends: recordedCount() },
	};
}

const median = (values: number[]) =>
	[...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Per item, over the batches in [from, to) of the run (fractions): the median batch over its items
 * (a full collection of the heap falls on one batch or another; the median is not moved by it).
 */
function perItem(run: LoopRun, key: keyof Batch, from = 0, to = 1): number {
	const first = Math.floor(run.batches.length * from);
	const last = Math.max(first + 1, Math.ceil(run.batches.length * to));
	return median(run.batches.slice(first, last).map((batch) => batch[key])) / run.size;
}

export async function benchLoop(env: BenchEnv): Promise<Figure[]> {
	const [small, large] = env.quick ? [200, 2_000] : [1_000, 10_000];
	const group = `6. The package's part of the nightly pattern: Generate in Loop Over Items' batches of ${BATCH}, Concurrency 8, no latency, in n8n-core's engine`;
	await env.control.setLatency('generate', 0);
	// Warm-up: the code paths compiled and the connections open before anything is measured.
	env.log(`loop: warm-up`);
	await loopRun(env, small);
	await loopRun(env, small, { size: small });
	// Three runs of the small size, in batches and in one run, taking turns; then the large one, and
	// the prompt reader at both sizes. The medians of the small ones are the reference.
	const smallRuns: LoopRun[] = [];
	const plainRuns: LoopRun[] = [];
	for (let i = 0; i < 3; i++) {
		env.log(`loop: ${small} products, run ${i + 1}, in batches and in one run of the node`);
		smallRuns.push(await loopRun(env, small));
		plainRuns.push(await loopRun(env, small, { size: small }));
	}
	env.log(`loop: ${large} products`);
	const big = await loopRun(env, large);
	env.log(`loop: the prompt reader, ${small} and ${large} products`);
	await loopRun(env, small, { control: true });
	const floor = {
		small: await loopRun(env, small, { control: true }),
		large: await loopRun(env, large, { control: true }),
	};
	const tenths = (run: LoopRun) =>
		Array.from({ length: 10 }, (_, tenth) =>
			perItem(run, 'cpuMs', tenth / 10, (tenth + 1) / 10).toFixed(2),
		).join(' ');
	env.log(
		`loop: ${large} products, CPU per item (ms) by tenth of the run: Generate ${tenths(big)}; the prompt reader ${tenths(floor.large)}`,
	);
	const reference = {
		cpu: median(smallRuns.map((run) => perItem(run, 'cpuMs'))),
		wall: median(smallRuns.map((run) => perItem(run, 'wallMs'))),
	};
	const note =
		"Generate's own time per item (CPU of this process while the node ran; the emulator is another process) in batches of 50 of one execution, n8n-core's engine and the stand-in of n8n's store (what n8n's database costs per store call: `--n8n --n8n-parts=durable`). The reference is the median of three runs of the smaller size; flat means within 1.1 × of it.";
	const sized = (products: number) => products.toLocaleString('en-US');
	const part = (from: number, to: number) =>
		perItem(big, 'cpuMs', from, to) - perItem(floor.large, 'cpuMs', from, to);
	return [
		figure({
			group,
			figure: `${sized(large)} products: CPU per item, whole run (against ${sized(small)})`,
			measured: perItem(big, 'cpuMs'),
			ideal: reference.cpu,
			unit: 'ms',
			maxRatio: 1.1,
			note,
		}),
		figure({
			group,
			figure: `${sized(large)} products: CPU per item, last 10 % of batches (against ${sized(small)})`,
			measured: perItem(big, 'cpuMs', 0.9, 1),
			ideal: reference.cpu,
			unit: 'ms',
			maxRatio: 1.1,
		}),
		figure({
			group,
			figure: `${sized(large)} products: Generate's part above the prompt reader, last 10 % of batches against its first 10 %`,
			measured: part(0.9, 1),
			ideal: part(0, 0.1),
			unit: 'ms',
			maxRatio: 1.1,
			note: "Generate's part: its CPU per item less the prompt reader's (a node that only reads each item's prompt expression, in the same engine and loop): what n8n costs any node per item, the heap's collections included, taken out.",
		}),
		figure({
			group,
			figure: `${sized(large)} products: the prompt reader (n8n's part), last 10 % of batches against its first 10 %`,
			measured: perItem(floor.large, 'cpuMs', 0.9, 1),
			ideal: perItem(floor.large, 'cpuMs', 0, 0.1),
			unit: 'ms',
		}),
		figure({
			group,
			figure: `${sized(large)} products: the node's wall per item (against ${sized(small)})`,
			measured: perItem(big, 'wallMs'),
			ideal: reference.wall,
			unit: 'ms',
			maxRatio: 1.1,
		}),
		figure({
			group,
			figure: `${sized(small)} products in batches: CPU per item against the same products in one run of the node`,
			measured: reference.cpu,
			ideal: median(plainRuns.map((run) => perItem(run, 'cpuMs'))),
			unit: 'ms',
			maxRatio: 1.1,
		}),
		figure({
			group,
			figure: `${sized(large)} products: store calls per item (against ${sized(small)})`,
			measured: big.storeCalls / big.products,
			ideal: median(smallRuns.map((run) => run.storeCalls / run.products)),
			unit: '',
			maxRatio: 1.1,
		}),
		figure({
			group,
			figure: `${sized(large)} products: the node's context data per product, as saved (against ${sized(small)})`,
			measured: big.contextBytes / big.products,
			ideal: median(smallRuns.map((run) => run.contextBytes / run.products)),
			unit: 'B',
			maxRatio: 1.1,
			note: `Values in the store's rows at the end, ${sized(large)} products: claims' row ${big.rows.claims.toLocaleString('en-US')}, sends' row ${big.rows.sends.toLocaleString('en-US')} (capped at 2,000 + 10,000 keys and 12,000).`,
		}),
	];
}
