/**
 * Publication → Get: the record untouched, the normalized manifest, its images; the picker's values.
 * The node runs in a real n8n execution context against the emulator over real HTTP.
 */
import type { IDataObject } from 'n8n-workflow';

import { useActionNode } from '../../harness/action-node';

const { emulator, run, runError } = useActionNode();

describe('Get Publication', () => {
	it('Get Publication returns the record untouched plus a normalized view (schemaVersion 3)', async () => {
		const record = await emulator.control.publish({});
		const [item] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		const { normalized, ...detail } = item.json as IDataObject & { normalized: IDataObject };
		expect(detail.manifest).toEqual(record.manifest);
		expect(detail).toMatchObject({
			id: record.id,
			pack_id: record.pack_id,
			version: record.version,
		});
		expect(normalized.schemaVersion).toBe(3);
		expect((normalized.images as IDataObject[]).length).toBeGreaterThan(0);
		expect(item.binary).toBeUndefined();
	});

	it('Get Publication downloads every downloadable image and reports deleted ones (schemaVersion 2)', async () => {
		const record = await emulator.control.publish({ schemaVersion: 2 });
		const [first] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		const images = (first.json.normalized as IDataObject).images as IDataObject[];
		expect(images.length).toBeGreaterThan(1);
		await emulator.control.deleteImage(emulator.accountId, String(images[0].imageId));
		await emulator.control.clearRequests();
		const [item] = await run({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
			options: { downloadImages: true },
		});
		const normalized = item.json.normalized as IDataObject & { images: IDataObject[] };
		expect(normalized.schemaVersion).toBe(2);
		expect(normalized.deletedImages).toBe(1);
		expect(normalized.images[0]).toMatchObject({ download_url: null, binaryProperty: null });
		expect(Object.keys(item.binary!)).toHaveLength(images.length - 1);
		const fileRequests = await emulator.control.requests({ route: 'file' });
		expect(fileRequests).toHaveLength(images.length - 1);
	});

	it('Get Publication of another account is a clear 404', async () => {
		const other = await emulator.control.createAccount({});
		const record = await emulator.control.publish({ accountId: other.accountId });
		const error = await runError({
			resource: 'publication',
			operation: 'get',
			publicationId: String(record.id),
		});
		expect(error.message).toBe('The publication does not exist or belongs to another account');
	});

	it('the picker’s value runs in list mode, and in ID mode with an expression', async () => {
		const record = await emulator.control.publish({ packId: 'pk_saved' });
		const picks = [
			{ __rl: true, mode: 'list', value: String(record.id), cachedResultName: 'whatever' },
			{ __rl: true, mode: 'id', value: '={{ $json.id }}' },
		];
		for (const publicationId of picks) {
			const [item] = await run(
				{ resource: 'publication', operation: 'get', publicationId },
				{ items: [{ json: { id: record.id } }] },
			);
			expect(item.json).toMatchObject({ id: record.id, pack_id: 'pk_saved' });
		}
	});

	it('a bad ID fails before anything is sent, naming the item and what is allowed', async () => {
		const error = await runError({
			resource: 'publication',
			operation: 'get',
			publicationId: { __rl: true, mode: 'id', value: 'pk_123' },
		});
		expect(error.message).toMatch(
			/^Item 0: Publication ID "pk_123" is not a publication record id. Allowed values/,
		);
		expect(await emulator.control.requests({ listener: 'api' })).toHaveLength(0);
	});
});
