/**
 * A flat view of a publication manifest, whatever its schemaVersion: the seller's text notes and the
 * images in order, each image with the note of the group it belongs to. The manifest itself is always
 * passed on untouched; this view is added beside it.
 *
 * schemaVersion 3: `blocks[]` of `text` (id, content) and `images` (id, items[] of imageId and
 * download_url) blocks. schemaVersion 2 (records before 2026-09-10): `slots[].items[]`; the API
 * document does not show the slot layout, so the fields are read defensively.
 */

export interface NormalizedNote {
	/** The text block's id (v3) or the slot's id (v2). */
	source: string;
	content: string;
}

export interface NormalizedImage {
	imageId: string | null;
	/** Relative `/api/file/<name>` path, or null when the seller deleted the image by hand. */
	download_url: string | null;
	/** The images block's id (v3) or the slot's id (v2). */
	group: string;
	/** The note that describes this image's group: the nearest text block before it (v3) or the slot's note (v2). */
	note: string | null;
	/** Position in the whole manifest, from 0. */
	position: number;
}

export interface NormalizedManifest {
	schemaVersion: number | null;
	notes: NormalizedNote[];
	images: NormalizedImage[];
	/** Images whose download_url is null (deleted by the seller): reported, never fetched. */
	deletedImages: number;
	/** Set when the manifest has a layout this version of the node does not know. */
	unsupported?: string;
}

type Json = Record<string, unknown>;

const asObject = (value: unknown): Json | undefined =>
	value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const firstString = (object: Json, keys: string[]): string | undefined => {
	for (const key of keys) {
		const value = object[key];
		if (typeof value === 'string' && value.trim()) return value;
		if (typeof value === 'number') return String(value);
	}
	return undefined;
};

function imageFrom(item: unknown, group: string, note: string | null, position: number) {
	const object = asObject(item) ?? {};
	const url = object.download_url ?? object.downloadUrl;
	return {
		imageId: firstString(object, ['imageId', 'image_id', 'id']) ?? null,
		download_url: typeof url === 'string' && url ? url : null,
		group,
		note,
		position,
	};
}

function finish(schemaVersion: number, notes: NormalizedNote[], images: NormalizedImage[]) {
	const deletedImages = images.filter((image) => image.download_url === null).length;
	return { schemaVersion, notes, images, deletedImages };
}

function fromBlocks(manifest: Json): NormalizedManifest {
	const notes: NormalizedNote[] = [];
	const images: NormalizedImage[] = [];
	let currentNote: string | null = null;
	asArray(manifest.blocks).forEach((raw, index) => {
		const block = asObject(raw) ?? {};
		const id = firstString(block, ['id']) ?? `block_${index}`;
		if (block.type === 'text') {
			const content = typeof block.content === 'string' ? block.content : '';
			notes.push({ source: id, content });
			currentNote = content;
		} else if (block.type === 'images') {
			for (const item of asArray(block.items))
				images.push(imageFrom(item, id, currentNote, images.length));
		}
	});
	return finish(3, notes, images);
}

function fromSlots(manifest: Json): NormalizedManifest {
	const notes: NormalizedNote[] = [];
	const images: NormalizedImage[] = [];
	asArray(manifest.slots).forEach((raw, index) => {
		const slot = asObject(raw) ?? {};
		const id = firstString(slot, ['slotId', 'slot_id', 'id', 'key', 'name']) ?? `slot_${index}`;
		const note =
			firstString(slot, ['note', 'content', 'description', 'text', 'title', 'name']) ?? null;
		if (note) notes.push({ source: id, content: note });
		for (const item of asArray(slot.items)) images.push(imageFrom(item, id, note, images.length));
	});
	return finish(2, notes, images);
}

export function normalizeManifest(manifest: unknown): NormalizedManifest {
	const object = asObject(manifest);
	const schemaVersion = typeof object?.schemaVersion === 'number' ? object.schemaVersion : null;
	if (object && Array.isArray(object.blocks) && (schemaVersion === 3 || schemaVersion === null)) {
		return fromBlocks(object);
	}
	if (object && Array.isArray(object.slots) && (schemaVersion === 2 || schemaVersion === null)) {
		return fromSlots(object);
	}
	// A known version without its list is malformed, not unknown: say which list is missing.
	const list = schemaVersion === 3 ? 'blocks' : schemaVersion === 2 ? 'slots' : undefined;
	return {
		schemaVersion,
		notes: [],
		images: [],
		deletedImages: 0,
		unsupported: list
			? `schemaVersion ${schemaVersion} manifest has no ${list} list; the manifest is passed on unchanged`
			: `schemaVersion ${schemaVersion ?? 'missing'} is not known to this node; the manifest is passed on unchanged`,
	};
}
