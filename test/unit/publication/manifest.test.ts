/**
 * normalizeManifest: the flat view (notes, images with the note of their group, deleted count) of a
 * publication manifest, for schemaVersion 3 (`blocks`), 2 (`slots[].items[]`) and anything else.
 * Checked against hand-written edge cases and against real manifests served by the emulator.
 */
import { normalizeManifest } from '../../../nodes/ImagePack/actions/publication/manifest';
import { type Emulator, startEmulator } from '../../emulator';

function deepFreeze<T>(value: T): T {
	if (value && typeof value === 'object') {
		Object.values(value as Record<string, unknown>).forEach(deepFreeze);
		Object.freeze(value);
	}
	return value;
}

describe('normalizeManifest: schemaVersion 3 (blocks)', () => {
	const manifest = {
		schemaVersion: 3,
		blocks: [
			{ id: 'g0', type: 'images', items: [{ imageId: 'img_0', download_url: '/api/file/0.png' }] },
			{ id: 't1', type: 'text', content: 'Hero images: the first is the cover' },
			{
				id: 'g1',
				type: 'images',
				items: [
					{ imageId: 'img_1', download_url: '/api/file/1.png' },
					{ imageId: 'img_2', download_url: null },
				],
			},
			{ id: 'g2', type: 'images', items: [{ imageId: 'img_3', download_url: '/api/file/3.png' }] },
			{ id: 't2', type: 'text', content: 'Detail shots, in this order' },
			{ id: 'g3', type: 'images', items: [{ imageId: 'img_4', download_url: '/api/file/4.png' }] },
			{ id: 't3', type: 'text', content: 'Trailing note without images' },
		],
	};

	it('lists the notes in order, by block id', () => {
		expect(normalizeManifest(manifest).notes).toEqual([
			{ source: 't1', content: 'Hero images: the first is the cover' },
			{ source: 't2', content: 'Detail shots, in this order' },
			{ source: 't3', content: 'Trailing note without images' },
		]);
	});

	it('lists the images in order, each with its group, position and the nearest preceding note', () => {
		const result = normalizeManifest(manifest);
		expect(result.schemaVersion).toBe(3);
		expect(result.unsupported).toBeUndefined();
		expect(result.images).toEqual([
			{ imageId: 'img_0', download_url: '/api/file/0.png', group: 'g0', note: null, position: 0 },
			{
				imageId: 'img_1',
				download_url: '/api/file/1.png',
				group: 'g1',
				note: 'Hero images: the first is the cover',
				position: 1,
			},
			{
				imageId: 'img_2',
				download_url: null,
				group: 'g1',
				note: 'Hero images: the first is the cover',
				position: 2,
			},
			{
				imageId: 'img_3',
				download_url: '/api/file/3.png',
				group: 'g2',
				note: 'Hero images: the first is the cover',
				position: 3,
			},
			{
				imageId: 'img_4',
				download_url: '/api/file/4.png',
				group: 'g3',
				note: 'Detail shots, in this order',
				position: 4,
			},
		]);
	});

	it('counts images with a null download_url as deleted, and keeps them listed', () => {
		const result = normalizeManifest(manifest);
		expect(result.deletedImages).toBe(1);
		expect(result.images.find((image) => image.imageId === 'img_2')?.download_url).toBeNull();
	});

	it('never changes the manifest it reads', () => {
		const frozen = deepFreeze(JSON.parse(JSON.stringify(manifest)));
		expect(() => normalizeManifest(frozen)).not.toThrow();
		expect(frozen).toEqual(manifest);
	});

	it('ignores unknown block types and blocks that are not objects', () => {
		const result = normalizeManifest({
			schemaVersion: 3,
			blocks: [
				null,
				'text',
				42,
				['nested'],
				{
					id: 'v',
					type: 'video',
					items: [{ imageId: 'img_v', download_url: '/api/file/v.mp4' }],
					content: 'not a note',
				},
				{ id: 'x', content: 'no type' },
				{ id: 't', type: 'text', content: 'Note' },
				{ id: 'g', type: 'images', items: [{ imageId: 'img_1', download_url: '/api/file/1.png' }] },
			],
		});
		expect(result.notes).toEqual([{ source: 't', content: 'Note' }]);
		expect(result.images).toEqual([
			{ imageId: 'img_1', download_url: '/api/file/1.png', group: 'g', note: 'Note', position: 0 },
		]);
		expect(result.deletedImages).toBe(0);
		expect(result.unsupported).toBeUndefined();
	});

	it('fills in missing ids and tolerates missing or odd fields', () => {
		const result = normalizeManifest({
			schemaVersion: 3,
			blocks: [
				{ type: 'text' },
				{ type: 'text', content: 42 },
				{ id: 7, type: 'images', items: 'not a list' },
				{ type: 'images' },
				{
					id: '  ',
					type: 'images',
					items: [
						null,
						'img_str',
						{ imageId: 'img_ok', download_url: '' },
						{ image_id: 'img_snake', downloadUrl: '/api/file/s.png' },
						{ id: 'img_id' },
					],
				},
			],
		});
		expect(result.notes).toEqual([
			{ source: 'block_0', content: '' },
			{ source: 'block_1', content: '' },
		]);
		expect(result.images).toEqual([
			{ imageId: null, download_url: null, group: 'block_4', note: '', position: 0 },
			{ imageId: null, download_url: null, group: 'block_4', note: '', position: 1 },
			{ imageId: 'img_ok', download_url: null, group: 'block_4', note: '', position: 2 },
			{
				imageId: 'img_snake',
				download_url: '/api/file/s.png',
				group: 'block_4',
				note: '',
				position: 3,
			},
			{ imageId: 'img_id', download_url: null, group: 'block_4', note: '', position: 4 },
		]);
		expect(result.deletedImages).toBe(4);
	});

	it('gives an empty view for an empty blocks list', () => {
		expect(normalizeManifest({ schemaVersion: 3, blocks: [] })).toEqual({
			schemaVersion: 3,
			notes: [],
			images: [],
			deletedImages: 0,
		});
	});

	it('reads blocks when schemaVersion is missing', () => {
		const result = normalizeManifest({ blocks: [{ id: 't', type: 'text', content: 'n' }] });
		expect(result.notes).toEqual([{ source: 't', content: 'n' }]);
		expect(result.unsupported).toBeUndefined();
	});

	it.each([
		['missing', {}],
		['a string', { blocks: 'oops' }],
		['an object', { blocks: { 0: { type: 'text', content: 'x' } } }],
		['null', { blocks: null }],
	])(
		'flags a schemaVersion 3 manifest whose blocks are %s, without claiming the version is unknown',
		(_label, extra) => {
			const result = normalizeManifest({ schemaVersion: 3, ...extra });
			expect(result.schemaVersion).toBe(3);
			expect(result.notes).toEqual([]);
			expect(result.images).toEqual([]);
			expect(result.deletedImages).toBe(0);
			expect(result.unsupported).toContain('blocks');
			expect(result.unsupported).not.toMatch(/not known/);
		},
	);
});

describe('normalizeManifest: schemaVersion 2 (slots)', () => {
	it('reads slots with their note and items', () => {
		const result = normalizeManifest({
			schemaVersion: 2,
			slots: [
				{
					slotId: 'main',
					name: 'Main',
					note: 'White background hero',
					items: [{ imageId: 'img_1', download_url: '/api/file/1.png' }],
				},
				{
					slotId: 'detail',
					name: 'Detail',
					note: 'Detail page, in order',
					items: [
						{ imageId: 'img_2', download_url: '/api/file/2.png' },
						{ imageId: 'img_3', download_url: null },
					],
				},
			],
		});
		expect(result.schemaVersion).toBe(2);
		expect(result.unsupported).toBeUndefined();
		expect(result.notes).toEqual([
			{ source: 'main', content: 'White background hero' },
			{ source: 'detail', content: 'Detail page, in order' },
		]);
		expect(result.images).toEqual([
			{
				imageId: 'img_1',
				download_url: '/api/file/1.png',
				group: 'main',
				note: 'White background hero',
				position: 0,
			},
			{
				imageId: 'img_2',
				download_url: '/api/file/2.png',
				group: 'detail',
				note: 'Detail page, in order',
				position: 1,
			},
			{
				imageId: 'img_3',
				download_url: null,
				group: 'detail',
				note: 'Detail page, in order',
				position: 2,
			},
		]);
		expect(result.deletedImages).toBe(1);
	});

	it('reads the slot id and note from alternative field names, and falls back when absent', () => {
		const result = normalizeManifest({
			schemaVersion: 2,
			slots: [
				{
					slot_id: 's1',
					description: 'described',
					items: [{ imageId: 'img_1', download_url: '/api/file/1.png' }],
				},
				{ id: 3, text: 'texted', items: [] },
				{ items: [{ imageId: 'img_2', download_url: '/api/file/2.png' }] },
				null,
				{ key: 'k', items: 'not a list' },
			],
		});
		expect(result.notes).toEqual([
			{ source: 's1', content: 'described' },
			{ source: '3', content: 'texted' },
		]);
		expect(result.images).toEqual([
			{
				imageId: 'img_1',
				download_url: '/api/file/1.png',
				group: 's1',
				note: 'described',
				position: 0,
			},
			{
				imageId: 'img_2',
				download_url: '/api/file/2.png',
				group: 'slot_2',
				note: null,
				position: 1,
			},
		]);
	});

	it('reads slots when schemaVersion is missing', () => {
		expect(normalizeManifest({ slots: [{ slotId: 'a', note: 'n', items: [] }] }).notes).toEqual([
			{ source: 'a', content: 'n' },
		]);
	});

	it('flags a schemaVersion 2 manifest without a slots list, without claiming the version is unknown', () => {
		const result = normalizeManifest({ schemaVersion: 2, blocks: [] });
		expect(result.schemaVersion).toBe(2);
		expect(result.images).toEqual([]);
		expect(result.unsupported).toContain('slots');
		expect(result.unsupported).not.toMatch(/not known/);
	});
});

describe('normalizeManifest: unknown or missing layouts', () => {
	it.each([
		[1, { schemaVersion: 1, blocks: [{ id: 't', type: 'text', content: 'x' }] }],
		[4, { schemaVersion: 4, blocks: [{ id: 't', type: 'text', content: 'x' }] }],
		[4, { schemaVersion: 4, slots: [] }],
	])('does not guess at schemaVersion %p', (version, manifest) => {
		const result = normalizeManifest(manifest);
		expect(result.schemaVersion).toBe(version);
		expect(result.notes).toEqual([]);
		expect(result.images).toEqual([]);
		expect(result.deletedImages).toBe(0);
		expect(result.unsupported).toContain(`schemaVersion ${version}`);
		expect(result.unsupported).toContain('passed on unchanged');
	});

	it.each([
		['an empty object', {}],
		['null', null],
		['undefined', undefined],
		['an array', [{ type: 'text' }]],
		['a string', '{"schemaVersion":3}'],
		['a number', 3],
		['a string schemaVersion without lists', { schemaVersion: '3' }],
	])('reports %s as unsupported instead of throwing', (_label, manifest) => {
		const result = normalizeManifest(manifest);
		expect(result.schemaVersion).toBeNull();
		expect(result.notes).toEqual([]);
		expect(result.images).toEqual([]);
		expect(result.deletedImages).toBe(0);
		expect(result.unsupported).toContain('schemaVersion missing');
	});
});

describe('normalizeManifest: real manifests from the emulator', () => {
	let emulator: Emulator;

	beforeAll(async () => {
		emulator = await startEmulator();
	});

	afterAll(async () => {
		await emulator?.close();
	});

	it('reads the emulator’s default schemaVersion 3 manifest, and a hand-deleted image', async () => {
		const record = await emulator.control.publish({ schemaVersion: 3 });
		const manifest = record.manifest as {
			schemaVersion: number;
			blocks: Array<Record<string, unknown>>;
		};
		expect(manifest.schemaVersion).toBe(3);
		const text = manifest.blocks.find((block) => block.type === 'text') as {
			id: string;
			content: string;
		};
		const group = manifest.blocks.find((block) => block.type === 'images') as {
			id: string;
			items: Array<{ imageId: string; download_url: string | null }>;
		};

		const result = normalizeManifest(manifest);
		expect(result.schemaVersion).toBe(3);
		expect(result.unsupported).toBeUndefined();
		expect(result.notes).toEqual([{ source: text.id, content: text.content }]);
		expect(result.images).toEqual(
			group.items.map((item, position) => ({
				imageId: item.imageId,
				download_url: item.download_url,
				group: group.id,
				note: text.content,
				position,
			})),
		);
		expect(result.images.length).toBeGreaterThan(0);
		for (const image of result.images) expect(image.download_url).toMatch(/^\/api\/file\/[^/]+$/);
		expect(result.deletedImages).toBe(0);

		const victim = group.items[1].imageId;
		await emulator.control.deleteImage(victim);
		const after = normalizeManifest((await emulator.control.getPublication(record.id)).manifest);
		expect(after.deletedImages).toBe(1);
		expect(after.images.map((image) => image.imageId)).toEqual(
			group.items.map((item) => item.imageId),
		);
		expect(after.images.find((image) => image.imageId === victim)?.download_url).toBeNull();
		expect(
			after.images.filter((image) => image.imageId !== victim).every((image) => image.download_url),
		).toBe(true);
	});

	it('reads the emulator’s default schemaVersion 2 manifest (slots with a note each)', async () => {
		const record = await emulator.control.publish({ schemaVersion: 2 });
		const manifest = record.manifest as {
			schemaVersion: number;
			slots: Array<{
				slotId: string;
				note: string;
				items: Array<{ imageId: string; download_url: string | null }>;
			}>;
		};
		expect(manifest.schemaVersion).toBe(2);
		expect(manifest.slots.length).toBeGreaterThan(0);

		const result = normalizeManifest(manifest);
		expect(result.schemaVersion).toBe(2);
		expect(result.unsupported).toBeUndefined();
		expect(result.notes).toEqual(
			manifest.slots.map((slot) => ({ source: slot.slotId, content: slot.note })),
		);
		const expected = manifest.slots.flatMap((slot) =>
			slot.items.map((item) => ({
				imageId: item.imageId,
				download_url: item.download_url,
				group: slot.slotId,
				note: slot.note,
			})),
		);
		expect(result.images).toEqual(expected.map((image, position) => ({ ...image, position })));
		expect(result.deletedImages).toBe(0);

		const victim = manifest.slots[manifest.slots.length - 1].items[0].imageId;
		await emulator.control.deleteImage(victim);
		const after = normalizeManifest((await emulator.control.getPublication(record.id)).manifest);
		expect(after.deletedImages).toBe(1);
		expect(after.images.find((image) => image.imageId === victim)?.download_url).toBeNull();
	});

	it('attaches each note to the image groups that follow it in a seller-arranged manifest', async () => {
		const record = await emulator.control.publish({
			schemaVersion: 3,
			blocks: [
				{ id: 'g0', type: 'images', items: [{}] },
				{ id: 't1', type: 'text', content: '主图：第一张作首图' },
				{ id: 'g1', type: 'images', items: [{}, {}] },
				{ id: 'g2', type: 'images', items: [{}] },
				{ id: 't2', type: 'text', content: '详情图，按顺序使用' },
				{ id: 'g3', type: 'images', items: [{}] },
			],
		});
		const result = normalizeManifest(record.manifest);
		expect(result.notes).toEqual([
			{ source: 't1', content: '主图：第一张作首图' },
			{ source: 't2', content: '详情图，按顺序使用' },
		]);
		expect(result.images.map((image) => [image.group, image.note, image.position])).toEqual([
			['g0', null, 0],
			['g1', '主图：第一张作首图', 1],
			['g1', '主图：第一张作首图', 2],
			['g2', '主图：第一张作首图', 3],
			['g3', '详情图，按顺序使用', 4],
		]);
		expect(
			result.images.every((image) => image.imageId?.startsWith('img_') && image.download_url),
		).toBe(true);
	});

	it('reads seller-arranged schemaVersion 2 slots', async () => {
		const record = await emulator.control.publish({
			schemaVersion: 2,
			slots: [
				{ slotId: 'main', name: '主图', note: '白底', items: [{}, {}] },
				{ slotId: 'empty', name: '空', items: [] },
				{ slotId: 'detail', name: '详情图', note: '按顺序', items: [{}] },
			],
		});
		const result = normalizeManifest(record.manifest);
		expect(result.notes).toEqual([
			{ source: 'main', content: '白底' },
			// No note: the slot's name is the best description there is.
			{ source: 'empty', content: '空' },
			{ source: 'detail', content: '按顺序' },
		]);
		expect(result.images.map((image) => [image.group, image.note])).toEqual([
			['main', '白底'],
			['main', '白底'],
			['detail', '按顺序'],
		]);
	});
});
