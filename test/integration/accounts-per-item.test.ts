/**
 * Each item on its own account (#44): one Image Pack credential whose API Key is an expression,
 * `{{ $json.apiKey }}`, resolved by n8n per item (the harness resolves it as n8n's CredentialsHelper
 * does). Two sellers' rows in one run: every request of a row goes with its own key, every charge
 * lands on its own account, and a row whose credential resolves to nothing usable fails alone.
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { useEmulator } from '../harness/emulator';
import { runInEngine } from '../harness/engine';
import { credentialReads } from '../harness/n8n';

const emulator = useEmulator();

/** A second seller: its own account, credits and key. */
async function seller(credits = 1_000) {
	const { accountId } = await emulator.control.createAccount({ credits });
	const { key } = await emulator.control.createKey({ accountId });
	return { accountId, apiKey: key };
}

const expressionCredential = () => ({ baseUrl: emulator.baseUrl, apiKey: '={{ $json.apiKey }}' });

async function run(parameters: INodeParameters, items: INodeExecutionData[], errorOutput = true) {
	return await runInEngine({
		nodeType: new ImagePack(),
		parameters,
		credentials: expressionCredential(),
		runs: [items],
		errorOutput,
	});
}

const generate = (options: IDataObject = {}): INodeParameters => ({
	resource: 'image',
	operation: 'generate',
	prompt: '={{ $json.sku }}',
	model: 'nano-banana-2',
	ratio: '1:1',
	resolution: '1K',
	options: { downloadImages: false, ...options },
});

describe('one credential, an API Key per item', () => {
	it('Generate: each row generated in, and charged to, its own account', async () => {
		const a = { accountId: emulator.accountId, apiKey: emulator.apiKey };
		const b = await seller();
		const rows = [a, b, a, b].map((who, index) => ({
			json: { sku: `sku ${index}`, apiKey: who.apiKey },
		}));
		const result = await run(generate({ concurrency: 2, imageLinks: true }), rows);
		expect(result.output).toHaveLength(4);
		const log = await emulator.control.requests({ route: 'generate' });
		const byPrompt = Object.fromEntries(log.map((entry) => [entry.prompt, entry.accountId]));
		expect(byPrompt).toEqual({
			'sku 0': a.accountId,
			'sku 1': b.accountId,
			'sku 2': a.accountId,
			'sku 3': b.accountId,
		});
		expect((await emulator.control.turns(a.accountId)).map((turn) => turn.prompt).sort()).toEqual([
			'sku 0',
			'sku 2',
		]);
		expect((await emulator.control.turns(b.accountId)).map((turn) => turn.prompt).sort()).toEqual([
			'sku 1',
			'sku 3',
		]);
		// Each row's signed links were asked with its own key, and no row shows another's key.
		const files = await emulator.control.requests({ route: 'file' });
		expect(files.map((entry) => entry.accountId).sort()).toEqual(
			[a.accountId, a.accountId, b.accountId, b.accountId].sort(),
		);
		for (const [index, item] of result.output.entries()) {
			const other = [a, b][(index + 1) % 2].apiKey;
			expect(JSON.stringify(item.json)).not.toContain(other);
			expect(JSON.stringify(item.json)).not.toContain([a, b][index % 2].apiKey);
		}
	});

	it('Generate: a row whose key resolves to nothing usable fails alone, before anything is sent', async () => {
		const b = await seller();
		const rows = [
			{ json: { sku: 'good a', apiKey: emulator.apiKey } },
			{ json: { sku: 'no key', apiKey: '' } },
			{ json: { sku: 'not a key', apiKey: 'pk_live_oops' } },
			{ json: { sku: 'good b', apiKey: b.apiKey } },
		];
		const result = await run(generate(), rows);
		expect(result.output.map((item) => item.json.ok)).toEqual([true, true]);
		const errors = result.errorOutput.map((item) => item.json.error as IDataObject);
		expect(errors.map((error) => [error.code, error.charge])).toEqual([
			['invalid_credential', 'not_sent'],
			['invalid_credential', 'not_sent'],
		]);
		expect(String(errors[0].message)).toMatch(
			/^Item 1: The API key of the Image Pack API credential must start with sk_/,
		);
		expect(JSON.stringify(errors)).not.toContain('pk_live_oops');
		const log = await emulator.control.requests({ route: 'generate' });
		expect(log.map((entry) => entry.prompt).sort()).toEqual(['good a', 'good b']);
		// Without Continue On Fail the run stops before the first request.
		await emulator.control.clearRequests();
		const stopped = await run(generate(), rows, false);
		expect(stopped.error?.message).toMatch(/^Item 1: /);
		expect(await emulator.control.requests({ route: 'generate' })).toHaveLength(0);
	});

	it('Get Publication, Get Many and Download File: each row reads its own account', async () => {
		const b = await seller();
		const mine = await emulator.control.publish({});
		const theirs = await emulator.control.publish({ accountId: b.accountId });
		const rows = [
			{ json: { id: mine.id, apiKey: emulator.apiKey } },
			{ json: { id: theirs.id, apiKey: b.apiKey } },
		];
		const got = await run(
			{
				resource: 'publication',
				operation: 'get',
				publicationId: { __rl: true, mode: 'id', value: '={{ $json.id }}' },
			},
			rows,
		);
		expect(got.output.map((item) => item.json.id)).toEqual([mine.id, theirs.id]);
		const many = await run(
			{ resource: 'publication', operation: 'getMany', returnAll: true },
			rows,
		);
		const listed = (itemIndex: number) =>
			many.output
				.filter((item) => (item.pairedItem as { item: number }).item === itemIndex)
				.map((item) => item.json.id);
		expect(listed(0)).toEqual([mine.id]);
		expect(listed(1)).toEqual([theirs.id]);
		// The other account's record is not found with the first seller's key.
		const crossed = await run(
			{
				resource: 'publication',
				operation: 'get',
				publicationId: { __rl: true, mode: 'id', value: '={{ $json.id }}' },
			},
			[{ json: { id: theirs.id, apiKey: emulator.apiKey } }],
		);
		expect((crossed.errorOutput[0].json.error as IDataObject).httpStatus).toBe(404);

		const urls = got.output.map((item) => {
			const normalized = item.json.normalized as { images: Array<{ download_url: string | null }> };
			return normalized.images.find((image) => image.download_url)?.download_url;
		});
		await emulator.control.clearRequests();
		const downloaded = await run(
			{ resource: 'file', operation: 'download', fileUrl: '={{ $json.url }}' },
			[
				{ json: { url: urls[0], apiKey: emulator.apiKey } },
				{ json: { url: urls[1], apiKey: b.apiKey } },
			],
		);
		expect(downloaded.output).toHaveLength(2);
		expect(
			(await emulator.control.requests({ route: 'file' })).map((entry) => entry.accountId),
		).toEqual([emulator.accountId, b.accountId]);
	});
});

describe('how often the credential is read', () => {
	/** Runs Generate over `runs` (a loop's batches) with `apiKey`; returns the reads and who paid what. */
	async function reads(apiKey: string, runs: INodeExecutionData[][]) {
		credentialReads.count = 0;
		await emulator.control.clearRequests();
		const result = await runInEngine({
			nodeType: new ImagePack(),
			parameters: generate({ concurrency: 2 }),
			credentials: { baseUrl: emulator.baseUrl, apiKey },
			runs,
			errorOutput: true,
		});
		const log = await emulator.control.requests({ route: 'generate' });
		return {
			result,
			count: credentialReads.count,
			accounts: Object.fromEntries(log.map((entry) => [entry.prompt, entry.accountId])),
		};
	}
	const rows = (count: number, first = 0, extra: IDataObject = {}) =>
		Array.from({ length: count }, (_, index) => ({
			json: { sku: `sku ${first + index}`, ...extra },
		}));

	it('a credential that does not depend on the item: three reads for the run, one per later run', async () => {
		const plain = await reads(emulator.apiKey, [rows(6)]);
		expect(plain.result.output).toHaveLength(6);
		expect(plain.count).toBe(3);
		// An expression that reads no item ("={{ 'sk_…' }}") is the same for every row.
		const constant = await reads(`={{ "${emulator.apiKey}" }}`, [rows(6, 10)]);
		expect(constant.count).toBe(3);
		expect(new Set(Object.values(constant.accounts))).toEqual(new Set([emulator.accountId]));
		// A loop's batches in one execution: the answer holds for the later runs.
		const loop = await reads(emulator.apiKey, [rows(4, 20), rows(4, 24), rows(4, 28)]);
		expect(loop.result.output).toHaveLength(4);
		expect(Object.keys(loop.accounts)).toHaveLength(12);
		expect(loop.count).toBe(3 + 1 + 1);
	});

	it('a key picked by $itemIndex, round robin over two accounts: read per item', async () => {
		const b = await seller();
		const apiKey = `={{ ["${emulator.apiKey}", "${b.apiKey}"][$itemIndex % 2] }}`;
		// With 4 rows the index past the input (4) picks row 0's key; its neighbour (5) does not.
		const picked = await reads(apiKey, [rows(4)]);
		expect(picked.accounts).toEqual({
			'sku 0': emulator.accountId,
			'sku 1': b.accountId,
			'sku 2': emulator.accountId,
			'sku 3': b.accountId,
		});
		expect(picked.count).toBe(3 + 3);
	});

	it('a key read from the item, over a loop of batches: every row of every batch its own', async () => {
		const b = await seller();
		const keyed = (count: number, first: number) =>
			rows(count, first).map((row, index) => ({
				json: { ...row.json, apiKey: (first + index) % 3 === 0 ? b.apiKey : emulator.apiKey },
			}));
		const loop = await reads('={{ $json.apiKey }}', [keyed(3, 0), keyed(3, 3)]);
		expect(loop.accounts).toEqual(
			Object.fromEntries(
				Array.from({ length: 6 }, (_, index) => [
					`sku ${index}`,
					index % 3 === 0 ? b.accountId : emulator.accountId,
				]),
			),
		);
		// Run 0: item 0, the failed look past the input, items 1 and 2; run 1: each item.
		expect(loop.count).toBe(4 + 3);
	});
});
