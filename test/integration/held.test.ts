/**
 * Generate's held generations and hourly cap in real n8n execution contexts against the emulator: as a
 * tool under the MCP Server Trigger (the context's `parentNode` is the trigger, as n8n sets it), under
 * an AI agent (no parent: the bound is off unless set), and in a plain workflow (the hourly cap).
 */
import type { IExecuteFunctions, INodeParameters, INodeType } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { useEmulator } from '../harness/emulator';
import { runNode } from '../harness/n8n';

const emulator = useEmulator();
const MCP_TRIGGER = { name: 'MCP Server Trigger', type: '@n8n/n8n-nodes-langchain.mcpTrigger' };

/** The node type, with n8n's `parentNode` set on the context the way the MCP Server Trigger's tools get it. */
function underMcp(): INodeType {
	const node = new ImagePack();
	return {
		// n8n's tool variant: its name ends with Tool, which shows the '@tool' options.
		description: { ...node.description, name: 'imagePackTool' },
		methods: node.methods,
		async execute(this: IExecuteFunctions) {
			Object.assign(this, { parentNode: MCP_TRIGGER });
			return await node.execute.call(this);
		},
	};
}

const generate = (prompt: string, options: INodeParameters = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt,
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	options,
});

async function call(
	nodeType: INodeType,
	parameters: INodeParameters,
	asTool = true,
	apiKey = emulator.apiKey,
) {
	const [output] = await runNode({
		nodeType,
		parameters,
		items: [{ json: {} }],
		credentials: { baseUrl: emulator.baseUrl, apiKey },
		asTool,
	});
	return output;
}

const requests = async () => await emulator.control.requests({ route: 'generate' });

describe('Generate as a tool under the MCP Server Trigger', () => {
	it('throws a refusal whose message is the whole tool text (code, charge, request id)', async () => {
		await emulator.control.setCredits(emulator.accountId, 5);
		const failure = await call(underMcp(), generate('held: too expensive')).catch(
			(error: Error) => error,
		);
		expect(failure).toBeInstanceOf(Error);
		expect((failure as Error).name).toBe('NodeOperationError');
		expect((failure as Error).message).toMatch(
			/^Image generation failed: .+ Error code: insufficient_credits, HTTP 402\. The service refused or refunded the request: no credits were charged\. Request id: req_/,
		);
	});

	it('answers "running" with a handle within the bound; the handle collects it, charged once; then the same arguments are new', async () => {
		await emulator.control.setLatency('generate', 2_500);
		const parameters = generate('held: slow vase', { answerWithinSeconds: 1 });
		const [running] = await call(underMcp(), parameters);
		expect(running.json).toMatchObject({
			status: 'running',
			handle: expect.stringMatching(/^gen_/),
		});
		expect(String(running.json.message)).toMatch(
			/exactly the same arguments; that call waits up to 1 s/,
		);
		const handle = String(running.json.handle);
		let collected = running;
		for (let tries = 0; collected.json.status === 'running' && tries < 10; tries++) {
			[collected] = await call(
				underMcp(),
				generate('held: slow vase', { answerWithinSeconds: 1, handle }),
			);
		}
		expect(collected.json).toMatchObject({
			credits_charged: 12,
			turn_id: expect.stringMatching(/^t_/),
		});
		expect(await requests()).toHaveLength(1);
		await emulator.control.setLatency('generate', 0);
		const [again] = await call(underMcp(), parameters);
		expect(again.json.turn_id).not.toBe(collected.json.turn_id);
		expect(await requests()).toHaveLength(2);
	});

	it('with Answer Within 0 (no bound) it is still held: a retry after a dropped answer sends nothing', async () => {
		await emulator.control.injectFault({
			route: 'generate',
			kind: 'reset',
			when: 'after',
			promptIncludes: 'held: unbounded',
		});
		const parameters = generate('held: unbounded', { answerWithinSeconds: 0 });
		const first = await call(underMcp(), parameters).catch((error: Error) => error);
		expect((first as Error).message).toMatch(/may have been charged/);
		// What n8n's tool retry (Retry On Fail) does: the same call again.
		const again = await call(underMcp(), parameters).catch((error: Error) => error);
		expect((again as Error).message).toBe((first as Error).message);
		expect(await requests()).toHaveLength(1);
	});

	it('a handle answers only the request and the key it was made for', async () => {
		await emulator.control.setLatency('generate', 1_500);
		const [running] = await call(underMcp(), generate('held: mug', { answerWithinSeconds: 0.2 }));
		const handle = String(running.json.handle);
		const other = (await emulator.control.createKey({})).key;
		const refused = async (prompt: string, apiKey?: string) =>
			(await call(
				underMcp(),
				generate(prompt, { answerWithinSeconds: 0.2, handle }),
				true,
				apiKey,
			).then(
				() => new Error('answered'),
				(error: Error) => error,
			)) as Error;
		for (const refusal of [await refused('held: another mug'), await refused('held: mug', other)]) {
			expect(refusal.message).toMatch(
				/handle "gen_\w+" was made for other arguments, another API key or another node.+Error code: unknown_handle\. Nothing was sent/,
			);
		}
		expect(await requests()).toHaveLength(1);
		let collected = running;
		for (let tries = 0; collected.json.status === 'running' && tries < 20; tries++) {
			[collected] = await call(
				underMcp(),
				generate('held: mug', { answerWithinSeconds: 1, handle }),
			);
		}
		expect(collected.json).toMatchObject({ credits_charged: 12 });
		expect(await requests()).toHaveLength(1);
	});

	it('an unknown handle is refused and sends nothing', async () => {
		const failure = await call(
			underMcp(),
			generate('held: never sent', { handle: 'gen_000000000000000000' }),
		).catch((error: Error) => error);
		expect((failure as Error).message).toMatch(
			/The generation with handle "gen_000000000000000000" is not held by this n8n process.+Error code: unknown_handle\. Nothing was sent and no credits were used\./,
		);
		expect(await requests()).toHaveLength(0);
	});
});

describe('Generate as an AI agent tool', () => {
	it('waits for the images (no bound unless set) and returns failures as items', async () => {
		await emulator.control.setLatency('generate', 1_500);
		const [item] = await call(new ImagePack(), generate('held: agent vase'));
		expect(item.json.credits_charged).toBe(12);
		await emulator.control.setCredits(emulator.accountId, 5);
		const [failed] = await call(new ImagePack(), generate('held: agent expensive'));
		expect(failed.json).toMatchObject({ code: 'insufficient_credits', charged: 'not_charged' });
	});
});

describe('Max Credits per Hour', () => {
	it('holds across executions of the node: the third 12-credit run under 24 is refused before sending', async () => {
		const parameters = generate('held: hourly', { maxCreditsPerHour: 24 });
		await call(new ImagePack(), parameters, false);
		await call(new ImagePack(), { ...parameters, prompt: 'held: hourly 2' }, false);
		const failure = await call(
			new ImagePack(),
			{ ...parameters, prompt: 'held: hourly 3' },
			false,
		).catch((error: Error) => error);
		expect((failure as Error).message).toMatch(
			/The hourly credit cap of this node is reached: 24 of 24 credits \(Max Credits per Hour\)/,
		);
		expect(await requests()).toHaveLength(2);
	});
});
