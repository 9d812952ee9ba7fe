/**
 * Contract: the publication endpoints (list and detail) — publication records, the list (paging,
 * cursor echo, overlap, dedupe key), details with frozen schemaVersion 3 and 2 manifests,
 * download_url null after a manual delete, the global id sequence, versions per pack, out-of-order
 * commits and 100k-record lists.
 */
import { call, expectError, setup } from './helpers';

const { emu } = setup();

const list = (query = '', key?: string) => call(emu(), 'GET', `/api/v1/image-pack-publications${query}`, { key });
const detail = (id: number | string, key?: string) => call(emu(), 'GET', `/api/v1/image-pack-publications/${id}`, { key });

describe('list', () => {
	test('response shape: items ascending, next_since_id, reread_overlap 50, dedupe_by', async () => {
		const a = await emu().control.publish({ styleCode: 'RED-1' });
		const b = await emu().control.publish({ packId: a.pack_id });
		const reply = await list();
		expect(reply.status).toBe(200);
		expect(reply.json).toEqual({
			items: [
				{ id: a.id, pack_id: a.pack_id, version: 1, style_code: 'RED-1', source_revision: a.source_revision, published_at: a.published_at },
				{ id: b.id, pack_id: a.pack_id, version: 2, style_code: 'RED-1', source_revision: b.source_revision, published_at: b.published_at },
			],
			next_since_id: b.id,
			reread_overlap: 50,
			dedupe_by: ['pack_id', 'version'],
		});
		expect(a.pack_id).toMatch(/^pk_/);
		expect(b.source_revision).toBeGreaterThan(a.source_revision);
		expect(reply.headers['x-request-id']).toMatch(/^req_/);
	});

	test('since_id: only ids greater; with nothing new next_since_id echoes since_id', async () => {
		const records = [];
		for (let i = 0; i < 5; i++) records.push(await emu().control.publish());
		const after2 = await list(`?since_id=${records[1].id}`);
		expect(after2.json.items.map((r: { id: number }) => r.id)).toEqual(records.slice(2).map((r) => r.id));
		const none = await list(`?since_id=${records[4].id}`);
		expect(none.json).toMatchObject({ items: [], next_since_id: records[4].id });
		expect((await list('?since_id=999999')).json.next_since_id).toBe(999999);
		expect((await list()).json.items).toHaveLength(5); // since_id defaults to 0
		const empty = await call(emu(), 'GET', '/api/v1/image-pack-publications', { key: (await emu().control.createKey({ accountId: (await emu().control.createAccount()).accountId })).key });
		expect(empty.json).toMatchObject({ items: [], next_since_id: 0 });
	});

	test('limit: default 50, maximum 200; next_since_id is the last returned id', async () => {
		const { firstId } = await emu().control.publishBulk({ count: 450 });
		const page = await list();
		expect(page.json.items).toHaveLength(50);
		expect(page.json.next_since_id).toBe(firstId + 49);
		const big = await list('?limit=200');
		expect(big.json.items).toHaveLength(200);
		const next = await list(`?limit=200&since_id=${big.json.next_since_id}`);
		expect(next.json.items[0].id).toBe(firstId + 200);
		expect((await list('?limit=1')).json.items).toHaveLength(1);
	});

	test('bad paging parameters are 400, never silently clamped', async () => {
		for (const [query, code] of [
			['?limit=201', 'invalid_limit'],
			['?limit=0', 'invalid_limit'],
			['?limit=-5', 'invalid_limit'],
			['?limit=10.5', 'invalid_limit'],
			['?limit=abc', 'invalid_limit'],
			['?limit=', 'invalid_limit'],
			['?since_id=1.5', 'invalid_since_id'],
			['?since_id=x', 'invalid_since_id'],
		]) {
			expectError(await list(query), 400, code);
		}
	});

	test('a negative since_id (next_since_id − overlap early on) is an ordinary integer', async () => {
		const record = await emu().control.publish();
		const reply = await list('?since_id=-49');
		expect(reply.json.items.map((r: { id: number }) => r.id)).toEqual([record.id]);
	});

	test('only records of the calling account; ids come from ONE global sequence', async () => {
		const other = await emu().control.createAccount();
		const otherKey = (await emu().control.createKey({ accountId: other.accountId })).key;
		const mine1 = await emu().control.publish();
		const theirs = await emu().control.publish({ accountId: other.accountId });
		const mine2 = await emu().control.publish();
		expect([mine1.id, theirs.id, mine2.id]).toEqual([mine1.id, mine1.id + 1, mine1.id + 2]);
		expect((await list()).json.items.map((r: { id: number }) => r.id)).toEqual([mine1.id, mine2.id]);
		expect((await list('', otherKey)).json.items.map((r: { id: number }) => r.id)).toEqual([theirs.id]);
	});

	test('incremental contract: an id committed late is found by re-reading the overlap, dedupe by (pack_id, version)', async () => {
		const early = await emu().control.publish();
		const late = await emu().control.publish({ commit: false }); // id allocated, not yet visible
		const later = await emu().control.publish();
		expect(late.id).toBeLessThan(later.id);
		expect(late.committed).toBe(false);

		const round1 = await list('?since_id=0');
		expect(round1.json.items.map((r: { id: number }) => r.id)).toEqual([early.id, later.id]);
		expectError(await detail(late.id), 404, 'not_found');

		await emu().control.commitPublication(late.id);
		// Continuing strictly after next_since_id misses it...
		expect((await list(`?since_id=${round1.json.next_since_id}`)).json.items).toEqual([]);
		// ...re-reading reread_overlap ids before it finds it.
		const since = round1.json.next_since_id - round1.json.reread_overlap;
		const round2 = await list(`?since_id=${since}`);
		expect(round2.json.items.map((r: { id: number }) => r.id)).toEqual([early.id, late.id, later.id]);
		const seen = new Set([...round1.json.items, ...round2.json.items].map((r: { pack_id: string; version: number }) => `${r.pack_id}#${r.version}`));
		expect(seen.size).toBe(3);
		expect((await detail(late.id)).status).toBe(200);
	});
});

describe('records and versions', () => {
	test('version per pack starts at 1 and rises by one; records are immutable', async () => {
		const v1 = await emu().control.publish({ styleCode: 'A' });
		const other = await emu().control.publish();
		const v2 = await emu().control.publish({ packId: v1.pack_id, styleCode: 'B' });
		expect([v1.version, other.version, v2.version]).toEqual([1, 1, 2]);
		expect(other.pack_id).not.toBe(v1.pack_id);
		expect((await detail(v1.id)).json.style_code).toBe('A'); // the old record keeps its style code
		expect((await detail(v2.id)).json.style_code).toBe('B');
		expect((await detail(v1.id)).json.manifest).toEqual((await detail(v1.id)).json.manifest);
	});

	test('a publication listed again under a later id: same (pack_id, version) and manifest, pending until committed', async () => {
		const first = await emu().control.publish();
		const copy = await emu().control.repeatPublication(first.id, { commit: false });
		expect(copy.id).toBe(first.id + 1);
		expect([copy.pack_id, copy.version, copy.committed]).toEqual([first.pack_id, first.version, false]);
		expect((await list()).json.items.map((r: { id: number }) => r.id)).toEqual([first.id]);
		await emu().control.commitPublication(copy.id);
		const items = (await list()).json.items;
		expect(items.map((r: { id: number }) => r.id)).toEqual([first.id, copy.id]);
		expect(items[1]).toMatchObject({ pack_id: first.pack_id, version: first.version });
		expect((await detail(copy.id)).json.manifest).toEqual((await detail(first.id)).json.manifest);
		expect((await emu().control.repeatPublication(copy.id)).committed).toBe(true);
		await expect(emu().control.repeatPublication(9999)).rejects.toThrow();
	});

	test('style codes may repeat across packs; published_at is epoch milliseconds', async () => {
		const a = await emu().control.publish({ styleCode: 'SAME' });
		const b = await emu().control.publish({ styleCode: 'SAME' });
		expect(a.pack_id).not.toBe(b.pack_id);
		const { now } = await emu().control.now();
		expect(Math.abs(a.published_at - now)).toBeLessThan(5000);
	});
});

describe('detail and manifests', () => {
	test('schemaVersion 3: blocks in the seller order, text and images, download_url added and downloadable', async () => {
		const [x, y] = (await emu().control.seedImages({ count: 2 })).images;
		const record = await emu().control.publish({
			blocks: [
				{ id: 'b1', type: 'images', items: [{ imageId: y.id }, { imageId: x.id, caption: 'kept as is' }] },
				{ id: 'b2', type: 'text', content: '注意：第二张只用于详情页。' },
			],
		});
		const reply = await detail(record.id);
		expect(reply.status).toBe(200);
		expect(reply.json).toEqual({
			id: record.id,
			pack_id: record.pack_id,
			version: 1,
			style_code: record.style_code,
			source_revision: record.source_revision,
			published_at: record.published_at,
			manifest: {
				schemaVersion: 3,
				blocks: [
					{
						id: 'b1',
						type: 'images',
						items: [
							{ imageId: y.id, download_url: y.url },
							{ imageId: x.id, caption: 'kept as is', download_url: x.url },
						],
					},
					{ id: 'b2', type: 'text', content: '注意：第二张只用于详情页。' },
				],
			},
		});
		const file = await call(emu(), 'GET', reply.json.manifest.blocks[0].items[0].download_url);
		expect(file.status).toBe(302);
	});

	test('default manifest: a text block and an images block with real, downloadable images', async () => {
		const record = await emu().control.publish();
		const manifest = (await detail(record.id)).json.manifest;
		expect(manifest.schemaVersion).toBe(3);
		expect(manifest.blocks.map((b: { type: string }) => b.type)).toEqual(['text', 'images']);
		for (const item of manifest.blocks[1].items) {
			expect(item.imageId).toMatch(/^img_/);
			expect((await call(emu(), 'GET', item.download_url)).status).toBe(302);
		}
	});

	test('a manual delete makes that item download_url null; the rest of the snapshot is untouched', async () => {
		const record = await emu().control.publish();
		const before = (await detail(record.id)).json.manifest;
		const [gone, kept] = before.blocks[1].items;
		await emu().control.deleteImage(gone.imageId);
		const after = (await detail(record.id)).json.manifest;
		expect(after.blocks[1].items[0]).toEqual({ imageId: gone.imageId, download_url: null });
		expect(after.blocks[1].items[1]).toEqual(kept);
		expect(after.blocks[0]).toEqual(before.blocks[0]);
		expectError(await call(emu(), 'GET', gone.download_url), 404, 'not_found');
	});

	test('schemaVersion 2 before 2026-09-10: slots[].items[] with slotId, name, note; never rewritten', async () => {
		const old = await emu().control.publish({ publishedAt: Date.UTC(2026, 5, 1) });
		const reply = await detail(old.id);
		expect(reply.json.published_at).toBe(Date.UTC(2026, 5, 1));
		const manifest = reply.json.manifest;
		expect(manifest.schemaVersion).toBe(2);
		expect(manifest.blocks).toBeUndefined();
		expect(manifest.slots.map((s: { slotId: string }) => s.slotId)).toEqual(['main', 'detail']);
		for (const slot of manifest.slots) {
			expect(slot).toEqual({ slotId: expect.any(String), name: expect.any(String), note: expect.any(String), items: expect.any(Array) });
			for (const item of slot.items) expect(item.download_url).toBe(`/api/file/${(await emu().control.images()).find((i) => i.id === item.imageId)!.filename}`);
		}
		// A new version of the same pack after the cutoff is schemaVersion 3; the old one stays 2.
		const v2 = await emu().control.publish({ packId: old.pack_id });
		expect((await detail(v2.id)).json.manifest.schemaVersion).toBe(3);
		expect((await detail(old.id)).json.manifest.schemaVersion).toBe(2);
		await expect(emu().control.publish({ schemaVersion: 2, publishedAt: Date.UTC(2026, 9, 1) })).rejects.toThrow(/contradicts/);
		expect((await emu().control.publish({ schemaVersion: 2 })).published_at).toBeLessThan(Date.UTC(2026, 8, 10));
	});

	test('another account record → 404 not_found; unknown id → 404; non-integer id → 400 invalid_id', async () => {
		const other = await emu().control.createAccount();
		const theirs = await emu().control.publish({ accountId: other.accountId });
		expectError(await detail(theirs.id), 404, 'not_found');
		expectError(await detail(424242), 404, 'not_found');
		expectError(await detail('abc'), 400, 'invalid_id');
		expectError(await detail('1.5'), 400, 'invalid_id');
	});
});

describe('bulk (benchmark support)', () => {
	test('100,000 publications: created, paged and looked up', async () => {
		const { firstId, lastId, count } = await emu().control.publishBulk({ count: 100_000, packs: 1000 });
		expect(count).toBe(100_000);
		expect(lastId - firstId).toBe(99_999);
		const tail = await list(`?since_id=${lastId - 10}&limit=200`);
		expect(tail.json.items).toHaveLength(10);
		expect(tail.json.next_since_id).toBe(lastId);
		const middle = await list(`?since_id=${firstId + 50_000}&limit=200`);
		expect(middle.json.items[0].id).toBe(firstId + 50_001);
		// 100 versions per pack, cycling through 1000 packs.
		const last = await detail(lastId);
		expect(last.json.version).toBe(100);
		expect(last.json.manifest.blocks[1].items.length).toBeGreaterThan(0);
		const first = await detail(firstId);
		expect(first.json.version).toBe(1);
		// A late commit into a big list lands in order.
		const late = await emu().control.publish({ commit: false });
		await emu().control.publish();
		await emu().control.commitPublication(late.id);
		const end = await list(`?since_id=${lastId}`);
		expect(end.json.items.map((r: { id: number }) => r.id)).toEqual([late.id, late.id + 1]);
	});

	test('manifests of a given size: images in groups of ten after notes in Chinese and English, a long note', async () => {
		const { firstId, lastId } = await emu().control.publishBulk({ count: 3, images: 40 });
		const forty = (await detail(lastId)).json.manifest;
		expect(forty.blocks.map((b: { type: string }) => b.type)).toEqual(['text', 'images', 'text', 'images', 'text', 'images', 'text', 'images']);
		const items = forty.blocks.flatMap((b: { items?: Array<{ download_url: string }> }) => b.items ?? []);
		expect(items).toHaveLength(40);
		expect(items.every((item: { download_url: string }) => item.download_url.startsWith('/api/file/'))).toBe(true);
		expect(forty.blocks[0].content).toMatch(/商品.*Hero shots/);
		expect((await detail(firstId)).json.manifest).toEqual(forty);
		const { lastId: long } = await emu().control.publishBulk({ count: 1, images: 1, noteChars: 2_000_000 });
		const longNote = (await detail(long)).json.manifest.blocks[0].content;
		expect(longNote).toHaveLength(2_000_000);
		const bad = await call(emu(), 'POST', '/_emulator/publications/bulk', { body: { count: 1, images: 2, schemaVersion: 2 } });
		expect(bad.status).toBe(400);
	});
});

describe('reread_overlap (test knob)', () => {
	test('the list announces the overlap set, 50 again after reset', async () => {
		await emu().control.publish();
		expect(await emu().control.setRereadOverlap(400)).toEqual({ overlap: 400 });
		expect((await list()).json.reread_overlap).toBe(400);
		await emu().control.reset();
		expect((await list()).json.reread_overlap).toBe(50);
	});
});
