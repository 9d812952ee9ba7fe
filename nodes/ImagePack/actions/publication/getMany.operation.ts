import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';

import { imagePackError } from '../../shared/errors';
import { eachItem, invalidParameter } from '../../shared/execution';
import { type Connection, getConnection, listPublications } from '../../transport';

const show = { resource: ['publication'], operation: ['getMany'] };
export const MAX_PAGE_SIZE = 200;

export const description: INodeProperties[] = [
	{
		displayName: 'Since ID',
		name: 'sinceId',
		type: 'number',
		typeOptions: { minValue: 0 },
		default: 0,
		description: 'Return only records with an ID greater than this (0 = from the first record)',
		displayOptions: { show },
	},
	{
		displayName: 'Return All',
		name: 'returnAll',
		type: 'boolean',
		default: false,
		description: 'Whether to return all results or only up to a given limit',
		displayOptions: { show },
	},
	{
		displayName: 'Limit',
		name: 'limit',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: MAX_PAGE_SIZE },
		default: 50,
		description: 'Max number of results to return',
		displayOptions: { show: { ...show, returnAll: [false] } },
	},
];

function wholeNumber(
	ctx: IExecuteFunctions,
	name: string,
	label: string,
	value: unknown,
	itemIndex: number,
	min: number,
	max: number,
): number {
	const number = Number(value);
	if (!Number.isSafeInteger(number) || number < min || number > max) {
		throw invalidParameter(
			ctx,
			name,
			`${label} "${String(value)}" is not allowed. Allowed values: whole numbers from ${min} to ${max}`,
			itemIndex,
		);
	}
	return number;
}

/** Return All reads at most this many records; beyond it, page with Since ID. */
export const MAX_RETURN_ALL_RECORDS = 100_000;
/** …and at most this many pages, however short the server makes them. */
export const MAX_RETURN_ALL_PAGES = 1_000;

function serverFault(ctx: IExecuteFunctions, itemIndex: number, what: string) {
	return imagePackError(
		ctx.getNode(),
		{ code: 'server_fault', charge: 'not_charged', itemIndex },
		{
			message: `the Image Pack API's publication list ${what}; reading stopped`,
			description:
				'This is a fault of the server (or of something in front of it), not of the workflow. Nothing was changed.',
			namesItem: true,
		},
	);
}

/**
 * Reads records after `sinceId`: one page of `limit`, or with Return All every page, bounded by
 * `MAX_RETURN_ALL_RECORDS`. Records come out by ascending id, each id once, whatever order the
 * server used; a server that does not advance (ignores since_id, repeats a cursor) is an error.
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
	// Within one call the pages follow next_since_id directly: re-reading the overlap only matters
	// across calls, and the trigger does that.
	for (;;) {
		const pageSize =
			limit === undefined ? MAX_PAGE_SIZE : Math.min(MAX_PAGE_SIZE, limit - byId.size);
		const { body } = await listPublications(
			ctx,
			connection,
			{ sinceId: cursor, limit: pageSize },
			{ itemIndex },
		);
		const items = Array.isArray(body.items) ? body.items.slice(0, pageSize) : [];
		let highest = cursor;
		for (const record of items) {
			const id = Number((record as IDataObject | null)?.id);
			if (!Number.isSafeInteger(id) || id <= cursor) {
				throw serverFault(
					ctx,
					itemIndex,
					`returned a record with id ${JSON.stringify((record as IDataObject | null)?.id)} for since_id=${cursor} (ids must be whole numbers above since_id)`,
				);
			}
			if (!byId.has(id)) byId.set(id, record as IDataObject);
			highest = Math.max(highest, id);
		}
		if (limit !== undefined || items.length === 0) break;
		const next = Number(body.next_since_id);
		if (!Number.isSafeInteger(next) || next <= cursor) break;
		if (byId.size >= MAX_RETURN_ALL_RECORDS || ++pages >= MAX_RETURN_ALL_PAGES) {
			throw imagePackError(
				ctx.getNode(),
				{ code: 'too_many_results', charge: 'not_charged', itemIndex },
				{
					message: `Return All stops at ${MAX_RETURN_ALL_RECORDS} publications or ${MAX_RETURN_ALL_PAGES} pages, and there are more`,
					description: `Read in parts: turn off Return All and set Since ID to the last id of the previous part (${highest} after this part), or use the Image Pack Trigger.`,
					namesItem: true,
				},
			);
		}
		cursor = next;
	}
	return [...byId.entries()].sort(([a], [b]) => a - b).map(([, record]) => record);
}

export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	const connection = await getConnection(this);
	return await eachItem(this, items, async (itemIndex) => {
		const sinceId = wholeNumber(
			this,
			'sinceId',
			'Since ID',
			this.getNodeParameter('sinceId', itemIndex, 0),
			itemIndex,
			0,
			Number.MAX_SAFE_INTEGER,
		);
		const returnAll = this.getNodeParameter('returnAll', itemIndex, false) as boolean;
		const limit = returnAll
			? undefined
			: wholeNumber(
					this,
					'limit',
					'Limit',
					this.getNodeParameter('limit', itemIndex, 50),
					itemIndex,
					1,
					MAX_PAGE_SIZE,
				);
		const records = await listRecords(this, itemIndex, sinceId, limit, connection);
		return records.map((record) => ({ json: record, pairedItem: { item: itemIndex } }));
	});
}
