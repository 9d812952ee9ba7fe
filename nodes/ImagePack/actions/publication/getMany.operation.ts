import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { imagePackError } from '../../shared/errors';
import { boundedNumber } from '../../shared/parameters';
import { eachItem, itemParameters } from '../items';
import { DEFAULT_OVERLAP, PAGE_LIMIT, dedupeKey } from '../../shared/publications';
import { type Connection, connectionsPerItem, listPublications } from '../../transport';

const sinceIdProperty: INodeProperties = {
	displayName: 'Since ID',
	name: 'sinceId',
	type: 'number',
	typeOptions: { minValue: 0, numberPrecision: 0 },
	default: 0,
	description: `Return only publications with an ID greater than this (0 = from the first one). Reading in parts? Start each part ${DEFAULT_OVERLAP} below the last ID of the previous one (the API’s reread_overlap: a publication can become visible late, under a lower ID) and skip publications you already have (same pack ID and version), or use the Image Pack Trigger, which does both.`,
};

const limitProperty: INodeProperties = {
	displayName: 'Limit',
	name: 'limit',
	type: 'number',
	typeOptions: { minValue: 1, maxValue: PAGE_LIMIT, numberPrecision: 0 },
	default: 50,
	description: 'Max number of results to return',
	displayOptions: { show: { returnAll: [false] } },
};

const properties: INodeProperties[] = [
	sinceIdProperty,
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		description: 'Whether to return all results or only up to a given limit',
	},
	limitProperty,
];

export const description = updateDisplayOptions(
	{ show: { resource: ['publication'], operation: ['getMany'] } },
	properties,
);

/** Return All reads at most this many records; beyond it, page with Since ID. */
export const MAX_RETURN_ALL_RECORDS = 100_000;
/** …and at most this many pages, however short the server makes them. */
export const MAX_RETURN_ALL_PAGES = 1_000;

/**
 * One item per publication: the API lists one publication under more than one id at times and says
 * to deduplicate by `(pack_id, version)` (its `dedupe_by`). The first listing (lowest id) is kept.
 */
function onePerPublication(records: IDataObject[]): IDataObject[] {
	const seen = new Set<string>();
	return records.filter((record) => {
		const { pack_id: packId, version } = record;
		if (typeof packId !== 'string' || typeof version !== 'number') return true; // no key to go by
		const key = dedupeKey(packId, version);
		if (seen.has(key)) return false;
		seen.add(key);
		return true;
	});
}

/**
 * Reads records after `sinceId`: one page of `limit`, or with Return All every page, bounded by
 * `MAX_RETURN_ALL_RECORDS`. Records come out by ascending id, each id once, whatever order the
 * server used, and each publication once (onePerPublication); a server that does not advance
 * (ignores since_id, repeats a cursor) is an error.
 */
async function listRecords(
	ctx: IExecuteFunctions,
	itemIndex: number,
	sinceId: number,
	limit: number | undefined,
	connection: Connection,
): Promise<IDataObject[]> {
	const byId = new Map<number, IDataObject>(); // records as the server sent them
	let cursor = sinceId;
	let pages = 0;
	let overlap = DEFAULT_OVERLAP; // until an answer announces one
	// Within one call the pages follow next_since_id directly: re-reading the overlap only matters
	// across calls, and the trigger does that.
	for (;;) {
		const pageSize = limit === undefined ? PAGE_LIMIT : Math.min(PAGE_LIMIT, limit - byId.size);
		const query = { sinceId: cursor, limit: pageSize };
		const { body } = await listPublications(ctx, connection, query, { itemIndex });
		const items = Array.isArray(body.items) ? body.items.slice(0, pageSize) : [];
		let highest = cursor;
		for (const record of items) {
			const id = Number((record as IDataObject | null)?.id);
			if (!Number.isSafeInteger(id) || id <= cursor) {
				throw imagePackError(
					ctx.getNode(),
					{ code: 'server_fault', charge: 'not_charged', itemIndex },
					{
						message: `the Image Pack API's publication list returned a record with id ${JSON.stringify((record as IDataObject | null)?.id)} for since_id=${cursor} (ids must be whole numbers above since_id); reading stopped`,
						description:
							'This is a fault of the server (or of something in front of it), not of the workflow. Nothing was changed.',
						namesItem: true,
					},
				);
			}
			if (!byId.has(id)) byId.set(id, record as IDataObject);
			highest = Math.max(highest, id);
		}
		const announced = Number(body.reread_overlap);
		if (Number.isSafeInteger(announced) && announced >= 0) overlap = announced;
		if (limit !== undefined || items.length === 0) break;
		const next = Number(body.next_since_id);
		if (!Number.isSafeInteger(next) || next <= cursor) break;
		if (byId.size >= MAX_RETURN_ALL_RECORDS || ++pages >= MAX_RETURN_ALL_PAGES) {
			throw imagePackError(
				ctx.getNode(),
				{ code: 'too_many_results', charge: 'not_charged', itemIndex },
				{
					message: `Return All stops at ${MAX_RETURN_ALL_RECORDS} publications or ${MAX_RETURN_ALL_PAGES} pages, and there are more`,
					description: `Read in parts: turn off Return All, set Since ID to the last id of the previous part minus the API's reread_overlap (${Math.max(0, highest - overlap)} after this part) and skip publications you already have (same pack_id and version); or use the Image Pack Trigger.`,
					namesItem: true,
				},
			);
		}
		cursor = next;
	}
	return onePerPublication(
		[...byId.entries()].sort(([a], [b]) => a - b).map(([, record]) => record),
	);
}

export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	const connectionOf = connectionsPerItem(this);
	return await eachItem(this, items, async (itemIndex) => {
		const connection = await connectionOf(itemIndex);
		const parameter = (property: INodeProperties) =>
			boundedNumber(property, this.getNodeParameter(property.name, itemIndex, property.default));
		const { sinceId, limit } = itemParameters(this, itemIndex, () => ({
			sinceId: parameter(sinceIdProperty),
			limit: this.getNodeParameter('returnAll', itemIndex, false)
				? undefined
				: parameter(limitProperty),
		}));
		const records = await listRecords(this, itemIndex, sinceId, limit, connection);
		return records.map((record) => ({ json: record, pairedItem: { item: itemIndex } }));
	});
}
