/**
 * The action node in the pinned n8n: workflows imported with the n8n CLI and run with `n8n execute`
 * against the emulator. One user folder, one credential import and one workflow import for the whole
 * file (every n8n CLI start costs seconds).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';

import { chain, emulatorCredential, loadExample, node, startTestEmulator, withCredential } from './fixtures.mjs';
import { createUserFolder, executeWorkflow, importCredential, importWorkflow, packPackage, readBinary } from './n8n.mjs';

const IMAGE_PACK = 'n8n-nodes-imagepack.imagePack';
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const generate = (name, parameters, extra) =>
	node(name, IMAGE_PACK, { resource: 'image', operation: 'generate', ...parameters }, extra);
/** A Code node that outputs the given rows as items. */
const rows = (name, list) =>
	node(name, 'n8n-nodes-base.code', { jsCode: `return ${JSON.stringify(list)}.map((json) => ({ json }));` }, { typeVersion: 2 });

describe('action node in n8n 2.41.1 (n8n execute against the emulator)', () => {
	let emulator;
	let userFolder;
	let publications;
	let seededImage;
	const ids = {
		generate: 'e2eGenerateBin01',
		refine: 'e2eGenerateRef01',
		getPublication: 'e2eGetPublicat01',
		pickerModes: 'e2ePickerModes01',
		getMany: 'e2eGetManyPubl01',
		download: 'e2eDownloadFil01',
		validation: 'e2eValidationF01',
		continueOnFail: 'e2eContinueOnF01',
	};

	before(async () => {
		emulator = await startTestEmulator();
		const { control } = emulator;
		// Publications: #1 schemaVersion 3, #2 schemaVersion 2 with one image deleted by the seller, #3 v3.
		const first = await control.publish({ packId: 'pk_mugs' });
		const second = await control.publish({ packId: 'pk_totes', schemaVersion: 2, publishedAt: Date.parse('2026-08-01T00:00:00Z') });
		const deleted = second.manifest.slots[1].items[0].imageId;
		await control.deleteImage(deleted);
		const third = await control.publish({ packId: 'pk_mugs' });
		publications = { first, second, third, deleted };
		[seededImage] = (await control.seedImages({ count: 1, ratio: '16:9', resolution: '1K' })).images;

		const credential = emulatorCredential(emulator);
		const workflows = [
			chain(ids.generate, 'e2e: generate with binaries', [
				generate('Generate', { prompt: 'A white ceramic mug on an oak table', model: 'nano-banana-2', ratio: '1:1', resolution: '2K', n: 2 }),
			]),
			chain(ids.refine, 'e2e: generate then refine', [
				generate('Generate', { prompt: 'A canvas tote bag', n: 1, options: { downloadImages: false } }),
				generate('Refine', {
					prompt: 'Same bag, with a navy blue strap',
					referenceImageIds: '={{ $json.images }}',
					sessionId: '={{ $json.session_id }}',
					options: { downloadImages: false },
				}),
			]),
			chain(ids.getPublication, 'e2e: get publication', [
				node('Get Publication', IMAGE_PACK, {
					resource: 'publication',
					operation: 'get',
					publicationId: { __rl: true, mode: 'id', value: String(second.id) },
					options: { downloadImages: true },
				}),
			]),
			// The picker's two modes: an ID (typed or mapped) and a publication picked from the list.
			chain(ids.pickerModes, 'e2e: publication picker by ID and from the list', [
				node('By ID', IMAGE_PACK, {
					resource: 'publication',
					operation: 'get',
					publicationId: { __rl: true, mode: 'id', value: String(first.id) },
				}),
				node('Picked', IMAGE_PACK, {
					resource: 'publication',
					operation: 'get',
					publicationId: { __rl: true, mode: 'list', value: String(third.id), cachedResultName: `#${third.id} · pk_mugs v2` },
				}),
			]),
			chain(ids.getMany, 'e2e: get many publications', [
				node('Get Many', IMAGE_PACK, { resource: 'publication', operation: 'getMany', sinceId: first.id, returnAll: true }),
			]),
			chain(ids.download, 'e2e: download file', [
				node('Download', IMAGE_PACK, { resource: 'file', operation: 'download', fileUrl: seededImage.url, binaryPropertyName: 'photo' }),
			]),
			chain(ids.validation, 'e2e: validation failure', [
				rows('Rows', [{ ratio: '1:1' }, { ratio: '4:5' }]),
				generate('Generate', { prompt: 'A brass desk lamp', model: 'seedream-5-0-pro', ratio: '={{ $json.ratio }}' }),
			]),
			chain(ids.continueOnFail, 'e2e: API error with Continue On Fail', [
				rows('Rows', [{ session: '' }, { session: 's_0000000000000000' }]),
				generate(
					'Generate',
					{ prompt: 'A green glass vase', sessionId: '={{ $json.session }}', options: { downloadImages: false } },
					{ onError: 'continueRegularOutput' },
				),
			]),
			loadExample('scheduled-batch-generation.json'),
		].map((workflow) => withCredential(workflow, credential));

		userFolder = await createUserFolder({ tarball: process.env.IMAGEPACK_TARBALL || (await packPackage()) });
		await importCredential(userFolder.dir, credential);
		await importWorkflow(userFolder.dir, workflows);
	});

	after(async () => {
		await emulator?.close();
		userFolder?.cleanup();
	});

	/** Runs a workflow with an empty request log, so that the log shows this run only. */
	async function execute(id) {
		await emulator.control.clearRequests();
		return executeWorkflow(userFolder.dir, id);
	}

	it('generate: the response, and the images as binaries named and typed like the API says', async () => {
		const result = await execute(ids.generate);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [item] = result.nodeOutput('Generate');
		assert.equal(item.json.ok, true);
		assert.equal(item.json.credits_charged, 32);
		assert.equal(item.json.credits_estimated, 32);
		assert.match(item.json.request_id, /^req_/);
		assert.deepEqual(item.pairedItem, { item: 0 });
		assert.equal(item.json.images.length, 2);
		const stored = new Map((await emulator.control.images()).map((image) => [image.id, image]));
		for (const [index, image] of item.json.images.entries()) {
			const binary = item.binary[`image_${index}`];
			assert.ok(binary, `binary image_${index}`);
			assert.equal(binary.fileName, image.filename);
			assert.equal(binary.mimeType, 'image/png');
			assert.equal(binary.fileExtension, 'png');
			const bytes = readBinary(userFolder.dir, binary);
			assert.equal(sha256(bytes), stored.get(image.id).sha256, 'the bytes n8n stored are the emulator’s file');
			assert.equal(bytes.readUInt32BE(16), 2048);
		}
		// The key goes to the API (generate + the file endpoint), never to the signed-link host.
		const api = await emulator.control.requests({ listener: 'api' });
		assert.deepEqual(api.map((entry) => entry.route), ['generate', 'file', 'file']);
		assert.ok(api.every((entry) => entry.headers.authorization === `Bearer ${emulator.apiKey}`));
		const files = await emulator.control.requests({ listener: 'files' });
		assert.equal(files.length, 2);
		assert.ok(files.every((entry) => entry.status === 200 && entry.headers.authorization === undefined), JSON.stringify(files));
	});

	it('generate → refine: the second node uses the first one’s images and session', async () => {
		const result = await execute(ids.refine);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [first] = result.nodeOutput('Generate');
		const [refined] = result.nodeOutput('Refine');
		assert.equal(refined.json.session_id, first.json.session_id);
		assert.equal(refined.binary, undefined);
		const [, refine] = (await emulator.control.turns()).slice(-2);
		assert.deepEqual(refine.refImageIds, first.json.images.map((image) => image.id));
		assert.equal(refine.sessionId, first.json.session_id);
		assert.equal(refine.prompt, 'Same bag, with a navy blue strap');
	});

	it('get publication: the record untouched, a normalized view, downloadable images attached', async () => {
		const result = await execute(ids.getPublication);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [item] = result.nodeOutput('Get Publication');
		const { second, deleted } = publications;
		assert.equal(item.json.id, second.id);
		assert.equal(item.json.pack_id, 'pk_totes');
		assert.equal(item.json.manifest.schemaVersion, 2);
		assert.deepEqual(item.json.manifest.slots.map((slot) => slot.slotId), second.manifest.slots.map((slot) => slot.slotId));
		const { normalized } = item.json;
		assert.equal(normalized.schemaVersion, 2);
		assert.equal(normalized.deletedImages, 1);
		assert.equal(normalized.images.find((image) => image.imageId === deleted).download_url, null);
		const downloadable = normalized.images.filter((image) => image.download_url);
		assert.equal(downloadable.length, 2);
		assert.deepEqual(Object.keys(item.binary).sort(), ['image_0', 'image_1']);
		for (const image of downloadable) {
			const binary = item.binary[image.binaryProperty];
			assert.equal(binary.mimeType, 'image/png');
			assert.equal(binary.fileName, image.download_url.split('/').pop());
		}
		const files = await emulator.control.requests({ listener: 'files' });
		assert.ok(files.every((entry) => entry.headers.authorization === undefined));
	});

	it('get publication: the picker runs in ID mode and in list mode', async () => {
		const result = await execute(ids.pickerModes);
		assert.ok(result.ok, result.stdout + result.stderr);
		assert.equal(result.nodeOutput('By ID')[0].json.id, publications.first.id);
		assert.equal(result.nodeOutput('Picked')[0].json.id, publications.third.id);
	});

	it('get many: one item per record after Since ID, ascending', async () => {
		const result = await execute(ids.getMany);
		assert.ok(result.ok, result.stdout + result.stderr);
		const items = result.nodeOutput('Get Many').map((item) => item.json);
		assert.deepEqual(items.map((record) => record.id), [publications.second.id, publications.third.id]);
		assert.deepEqual(items.map((record) => [record.pack_id, record.version]), [['pk_totes', 1], ['pk_mugs', 2]]);
		assert.ok(items.every((record) => !('manifest' in record)));
	});

	it('download file: the binary under the chosen field, fetched from the signed link without the key', async () => {
		const result = await execute(ids.download);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [item] = result.nodeOutput('Download');
		assert.equal(item.json.filename, seededImage.filename);
		assert.equal(item.json.mimeType, 'image/png');
		const binary = item.binary.photo;
		assert.equal(binary.fileName, seededImage.filename);
		assert.equal(sha256(readBinary(userFolder.dir, binary)), seededImage.sha256);
		const log = await emulator.control.requests();
		assert.deepEqual(log.map((entry) => [entry.listener, entry.status]), [['api', 302], ['files', 200]]);
		assert.equal(log[0].headers.authorization, `Bearer ${emulator.apiKey}`);
		assert.equal(log[1].headers.authorization, undefined);
	});

	it('validation failure: exits non-zero with "Item 1: …" and sends nothing, not even the valid item 0', async () => {
		const before = (await emulator.control.turns()).length;
		const result = await execute(ids.validation);
		assert.notEqual(result.code, 0, 'n8n execute exits non-zero');
		assert.equal(result.ok, false);
		const error = result.nodeError('Generate') ?? result.error;
		assert.ok(error, result.stdout + result.stderr);
		assert.match(error.message, /^Item 1: /);
		assert.match(error.message, /4:5/);
		assert.match(error.message, /1:1/, 'names the allowed values');
		assert.match(error.description, /Nothing was sent and no credits were used/);
		assert.match(result.stdout + result.stderr, /Item 1: /, 'the message reaches the CLI output');
		assert.deepEqual(await emulator.control.requests({ route: 'generate' }), []);
		assert.equal((await emulator.control.turns()).length, before);
	});

	it('example "scheduled batch generation": three products, two at a time, results saved in order', async () => {
		await emulator.control.setLatency('generate', 1500);
		try {
			const started = (await emulator.control.turns()).length;
			const result = await execute('ipxBatchGenerate');
			assert.ok(result.ok, result.stdout + result.stderr);
			const saved = result.nodeOutput('Save results').map((item) => item.json);
			assert.deepEqual(saved.map((row) => row.sku), ['MUG-001', 'TOTE-002', 'LAMP-003']);
			for (const row of saved) {
				assert.equal(row.credits_charged, 32);
				assert.equal(row.files.split(', ').length, 2);
			}
			assert.deepEqual(result.nodeOutput('Retry later'), [], 'nothing failed');
			const generated = result.nodeOutput('Generate images');
			assert.ok(generated.every((item) => item.binary?.image_0 && item.binary?.image_1));
			const turns = (await emulator.control.turns()).slice(started);
			assert.equal(turns.length, 3);
			// Concurrency 2: the first two generations ran at the same time, the third after one of them.
			const [a, b, c] = [...turns].sort((x, y) => x.createdAt - y.createdAt);
			assert.ok(b.createdAt < a.createdAt + a.durationMs, 'two generations overlap');
			assert.ok(c.createdAt >= Math.min(a.createdAt + a.durationMs, b.createdAt + b.durationMs) - 50, 'never three at once');
		} finally {
			await emulator.control.setLatency('generate', 0);
		}
	});

	it('example "scheduled batch generation": a product the account cannot pay for goes to Retry later, saying it cost nothing', async () => {
		const { credits } = await emulator.control.getAccount(emulator.accountId);
		await emulator.control.setCredits(emulator.accountId, 64); // two products of 32
		try {
			const result = await execute('ipxBatchGenerate');
			assert.ok(result.ok, result.stdout + result.stderr);
			assert.deepEqual(result.nodeOutput('Save results').map((row) => row.json.sku), ['MUG-001', 'TOTE-002']);
			const [failed, ...more] = result.nodeOutput('Retry later').map((row) => row.json);
			assert.equal(more.length, 0);
			assert.equal(failed.sku, 'LAMP-003');
			assert.match(failed.prompt, /lamp/i);
			assert.equal(failed.code, 'insufficient_credits');
			assert.equal(failed.charge, 'not_charged');
			assert.match(failed.request_id, /^req_/);
			assert.match(failed.reason, /credits/i);
		} finally {
			await emulator.control.setCredits(emulator.accountId, credits);
		}
	});

	it('API error with Continue On Fail: an error item with code, status, request id and charge; the other item goes on', async () => {
		const result = await execute(ids.continueOnFail);
		assert.ok(result.ok, result.stdout + result.stderr);
		const [good, bad] = result.nodeOutput('Generate');
		assert.equal(good.json.ok, true);
		assert.deepEqual(Object.keys(bad.json), ['error']);
		assert.equal(bad.json.error.code, 'session_not_found');
		assert.equal(bad.json.error.httpStatus, 404);
		assert.equal(bad.json.error.charge, 'not_charged');
		assert.match(bad.json.error.requestId, /^req_/);
		assert.doesNotMatch(bad.json.error.message, /[\u4e00-\u9fff]/, 'English, not the API’s Chinese message');
		assert.deepEqual(bad.pairedItem, { item: 1 });
	});
});
