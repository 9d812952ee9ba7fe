/**
 * On Error → *Continue (using error output)* through n8n's own engine (n8n-core's WorkflowExecute and
 * its handleNodeErrorOutput): for every operation, three items with the second one failing, the failed
 * item leaves by the error output with its facts, the others by the success output in input order.
 * A failure before the item loop (a credential whose Base URL is not a URL) fails every item there.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { useEmulator } from '../harness/emulator';
import { type EngineOptions, runInEngine } from '../harness/engine';

const emulator = useEmulator();

const three = (second: IDataObject, first: IDataObject = {}): INodeExecutionData[] =>
	[first, second, first].map((json) => ({ json }));

function engine(
	parameters: INodeParameters,
	runs: INodeExecutionData[][],
	overrides: Partial<EngineOptions> = {},
): EngineOptions {
	return {
		nodeType: new ImagePack(),
		parameters,
		credentials: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey },
		runs,
		continueOnFail: true,
		errorOutput: true,
		...overrides,
	};
}

const generate: INodeParameters = {
	resource: 'image',
	operation: 'generate',
	prompt: '={{ $json.prompt }}',
	model: 'seedream-5-0-pro',
	ratio: '={{ $json.ratio }}',
	options: { downloadImages: false },
};

/** The error item's `error`: the English message and the facts. */
const failure = (item: INodeExecutionData) => item.json.error as IDataObject;

describe('Continue (using error output): the failed item, and only it, on the error output', () => {
	it('Generate refused before sending: a ratio the model lacks (nothing sent)', async () => {
		const run = await runInEngine(
			engine(generate, [three({ prompt: 'b', ratio: '4:5' }, { prompt: 'a', ratio: '1:1' })]),
		);
		expect(run.run.status).toBe('success');
		expect(run.output.map((item) => [item.json.ok, item.pairedItem])).toEqual([
			[true, { item: 0 }],
			[true, { item: 2 }],
		]);
		const [failed] = run.errorOutput;
		expect(run.errorOutput).toHaveLength(1);
		expect(failed.pairedItem).toEqual({ item: 1 });
		expect(failure(failed).message).toMatch(/^Item 1: .*4:5/);
		expect(failure(failed)).toMatchObject({
			code: 'invalid_parameter',
			parameter: 'ratio',
			charge: 'not_sent',
		});
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(2);
	});

	it('Generate refused by the API: 402 insufficient_credits, not charged, with its request id', async () => {
		// seedream-5-0-pro at 1K: 6 credits an image. 20 credits: item 0 (6), not item 1 (24), item 2 (6).
		await emulator.control.setCredits(emulator.accountId, 20);
		const items = [1, 4, 1].map((n, index) => ({ json: { prompt: `p${index}`, ratio: '1:1', n } }));
		const run = await runInEngine(engine({ ...generate, n: '={{ $json.n }}' }, [items]));
		expect(run.run.status).toBe('success');
		expect(run.output.map((item) => item.pairedItem)).toEqual([{ item: 0 }, { item: 2 }]);
		const [failed] = run.errorOutput;
		expect(failed.pairedItem).toEqual({ item: 1 });
		expect(failure(failed)).toMatchObject({
			code: 'insufficient_credits',
			httpStatus: 402,
			requestId: expect.stringMatching(/^req_/),
			charge: 'not_charged',
		});
		expect((await emulator.control.getAccount(emulator.accountId)).credits).toBe(8);
	});

	it('a credential whose Base URL is not a URL: every item on the error output, none passed through', async () => {
		const run = await runInEngine(
			engine(generate, [three({ prompt: 'b', ratio: '1:1' }, { prompt: 'a', ratio: '1:1' })], {
				credentials: { baseUrl: 'not a url', apiKey: emulator.apiKey },
			}),
		);
		expect(run.run.status).toBe('success');
		expect(run.output).toEqual([]);
		expect(run.errorOutput.map((item) => item.pairedItem)).toEqual([
			{ item: 0 },
			{ item: 1 },
			{ item: 2 },
		]);
		expect(failure(run.errorOutput[0]).message).toMatch(/Base URL/);
		expect(failure(run.errorOutput[0]).charge).toBe('not_sent');
		expect(JSON.stringify(run.errorOutput)).not.toContain(emulator.apiKey);
		expect(await emulator.control.requests()).toEqual([]);
	});

	it('Continue (regular output): the same error item, on the one output', async () => {
		const run = await runInEngine(
			engine(generate, [three({ prompt: 'b', ratio: '4:5' }, { prompt: 'a', ratio: '1:1' })], {
				errorOutput: false,
			}),
		);
		expect(run.errorOutput).toEqual([]);
		expect(run.output.map((item) => item.pairedItem)).toEqual([
			{ item: 0 },
			{ item: 1 },
			{ item: 2 },
		]);
		expect(Object.keys(run.output[1].json).sort()).toEqual(['error']);
		expect(failure(run.output[1]).code).toBe('invalid_parameter');
	});

	it('with Retry On Fail: item 0 refused and refunded once is sent again alone; nothing is paid twice', async () => {
		await emulator.control.setGenerationBehaviour({ fail: true, promptIncludes: 'first' });
		const items = ['first', 'second', 'third'].map((prompt) => ({
			json: { prompt, ratio: '1:1' },
		}));
		const run = await runInEngine(engine(generate, [items], { maxTries: 3 }));
		expect(run.errorOutput).toEqual([]);
		expect(run.output.map((item) => item.json.ok)).toEqual([true, true, true]);
		const log = await emulator.control.requests({ route: 'generate' });
		expect(
			['first', 'second', 'third'].map((p) => log.filter((e) => e.prompt === p).length),
		).toEqual([2, 1, 1]);
		const turns = await emulator.control.turns();
		expect(turns.filter((turn) => turn.charged > 0)).toHaveLength(3);
	});

	it.each([
		[
			'Get Publication: another account’s record (404)',
			{ resource: 'publication', operation: 'get', publicationId: '={{ $json.id }}' },
			'not_found',
		],
		[
			'Get Many: a Since ID that is not a whole number',
			{ resource: 'publication', operation: 'getMany', sinceId: '={{ $json.id }}', limit: 5 },
			'invalid_parameter',
		],
		[
			'Download File: a file that does not exist (404)',
			{ resource: 'file', operation: 'download', fileUrl: '={{ $json.file }}' },
			'not_found',
		],
	])('%s', async (_name, parameters, code) => {
		const mine = await emulator.control.publish();
		const other = await emulator.control.createAccount({});
		const theirs = await emulator.control.publish({ accountId: other.accountId });
		const [image] = (await emulator.control.seedImages({ count: 1 })).images;
		const good = { id: parameters.operation === 'getMany' ? 0 : mine.id, file: image.url };
		const bad = {
			id: parameters.operation === 'getMany' ? -1 : theirs.id,
			file: '/api/file/nope.png',
		};
		const run = await runInEngine(engine(parameters, [three(bad, good)]));
		expect(run.run.status).toBe('success');
		expect(run.output.length).toBeGreaterThanOrEqual(2);
		expect(new Set(run.output.map((item) => (item.pairedItem as { item: number }).item))).toEqual(
			new Set([0, 2]),
		);
		expect(run.output.every((item) => !('error' in item.json))).toBe(true);
		expect(run.errorOutput.map((item) => item.pairedItem)).toEqual([{ item: 1 }]);
		expect(Object.keys(run.errorOutput[0].json).sort()).toEqual(['error']);
		expect(failure(run.errorOutput[0]).code).toBe(code);
	});
});
