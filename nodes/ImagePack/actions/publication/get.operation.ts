import type {
	IBinaryData,
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { ValidationIssue } from '../../shared/parameters';
import { maxFileBytes, maxFileSizeOption } from '../fileSize';
import { eachItem, itemParameters } from '../items';
import { normalizeManifest } from './manifest';
import { downloadBinary, connectionsPerItem, getPublication } from '../../transport';

const properties: INodeProperties[] = [
	{
		displayName: 'Publication',
		name: 'publicationId',
		type: 'resourceLocator',
		required: true,
		default: { mode: 'list', value: '' },
		description:
			'The publication record to read: pick it from the newest publications (search by ID, pack, version, style code or date), or give its numeric ID (the ID field of an Image Pack Trigger item)',
		builderHint: {
			propertyHint:
				"After the Image Pack Trigger use mode 'id' with the trigger item's id, e.g. expr('{{ $json.id }}'); mode 'list' is for a publication picked by hand. The output's normalized.images lists the images (download_url, null when deleted) for Split Out and then Download File.",
		},
		modes: [
			{
				displayName: 'From List',
				name: 'list',
				type: 'list',
				placeholder: 'Select a publication…',
				typeOptions: { searchListMethod: 'searchPublications', searchable: true },
			},
			{
				displayName: 'By ID',
				name: 'id',
				type: 'string',
				placeholder: '12345',
				validation: [
					{
						type: 'regex',
						properties: {
							regex: '^\\s*#?[1-9][0-9]*\\s*$',
							errorMessage: 'A publication ID is a positive whole number, such as 12345',
						},
					},
				],
			},
		],
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [
			{
				displayName: 'Download Images',
				name: 'downloadImages',
				type: 'boolean',
				default: false,
				description:
					'Whether to attach every downloadable image of the manifest as binary data (image_0, image_1, … in manifest order). Images the seller deleted are listed, never fetched.',
			},
			maxFileSizeOption,
		],
	},
];

export const description = updateDisplayOptions(
	{ show: { resource: ['publication'], operation: ['get'] } },
	properties,
);

/** Reads the record id of an item; rejects anything but a positive integer before sending. */
function publicationIdOf(ctx: IExecuteFunctions, itemIndex: number): number {
	// The picker's value ({ mode, value }); a plain value (an expression, a test) reads alike.
	const raw = ctx.getNodeParameter('publicationId', itemIndex, '', { extractValue: true });
	const text = String(raw).trim().replace(/^#/, '');
	if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
		throw new ValidationIssue(
			'publicationId',
			`Publication ID "${text}" is not a publication record id. Allowed values: a positive whole number, such as the "id" of an Image Pack Trigger item`,
		);
	}
	return Number(text);
}

/** The detail record untouched, plus `normalized` and (optionally) the images as binaries. */
export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	const connectionOf = connectionsPerItem(this);
	return await eachItem(this, items, async (itemIndex) => {
		const connection = await connectionOf(itemIndex);
		const { id, downloadImages, maxBytes } = itemParameters(this, itemIndex, () => {
			const options = this.getNodeParameter('options', itemIndex, {}) as IDataObject;
			return {
				id: publicationIdOf(this, itemIndex),
				downloadImages: Boolean(options.downloadImages),
				maxBytes: maxFileBytes(options),
			};
		});
		const { body } = await getPublication(this, connection, id, { itemIndex });
		const normalized = normalizeManifest(body.manifest);
		const binary: Record<string, IBinaryData> = {};
		const images = normalized.images.map((image) => ({
			...image,
			binaryProperty: null as string | null,
		}));
		for (const image of downloadImages ? images : []) {
			if (!image.download_url) continue;
			const key = `image_${Object.keys(binary).length}`;
			const options = { itemIndex, maxBytes };
			binary[key] = await downloadBinary(this, connection, image.download_url, options);
			image.binaryProperty = key;
		}
		return [
			{
				json: { ...body, normalized: { ...normalized, images } as unknown as IDataObject },
				binary: Object.keys(binary).length ? binary : undefined,
				pairedItem: { item: itemIndex },
			},
		];
	});
}
