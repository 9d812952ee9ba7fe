import type {
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { eachItem } from '../../shared/execution';
import { type Connection, apiRequest, getConnection } from '../../shared/transport';

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

interface ListPage {
	items: IDataObject[];
	next_since_id: number;
}

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
		throw new NodeOperationError(
			ctx.getNode(),
			`Item ${itemIndex}: ${label} "${String(value)}" is not allowed. Allowed values: whole numbers from ${min} to ${max}`,
			{ itemIndex, description: `Parameter "${name}"` },
		);
	}
	return number;
}

async function listRecords(
	ctx: IExecuteFunctions,
	itemIndex: number,
	sinceId: number,
	limit: number | undefined,
	connection: Connection,
): Promise<IDataObject[]> {
	const records: IDataObject[] = [];
	let cursor = sinceId;
	// Within one call the pages follow next_since_id directly: re-reading the overlap only matters
	// across calls, and the trigger does that.
	for (;;) {
		const pageSize =
			limit === undefined ? MAX_PAGE_SIZE : Math.min(MAX_PAGE_SIZE, limit - records.length);
		const { body } = await apiRequest<ListPage>(
			ctx,
			{
				method: 'GET',
				path: '/api/v1/image-pack-publications',
				qs: { since_id: cursor, limit: pageSize },
				itemIndex,
			},
			connection,
		);
		const items = Array.isArray(body.items) ? body.items : [];
		records.push(...items);
		const next = Number(body.next_since_id);
		if (items.length === 0 || !(next > cursor) || limit !== undefined) break;
		cursor = next;
	}
	return records;
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
