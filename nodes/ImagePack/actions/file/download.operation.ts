import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import { ValidationIssue } from '../../shared/parameters';
import { maxFileBytes, maxFileSizeOption } from '../fileSize';
import { eachItem, itemParameters } from '../items';
import { downloadBinary, connectionsPerItem } from '../../transport';

const properties: INodeProperties[] = [
	{
		displayName: 'File URL',
		name: 'fileUrl',
		type: 'string',
		required: true,
		default: '',
		placeholder: '/api/file/abc.png',
		description:
			'The file path of a generated image (from Generate’s images list) or of a manifest image (its download_url field), a bare file name, or a full URL on the credential’s host. The signed link it redirects to is fetched without your API key.',
		builderHint: {
			propertyHint:
				"One file per item. After Get Publication, Split Out normalized.images, skip entries whose download_url is empty (deleted images), then map expr('{{ $json.download_url }}') (or the split field's name). After Generate, an image's url, e.g. expr('{{ $json.images[0].url }}'); Generate already attaches its images as binaries unless Download Images is off.",
		},
	},
	{
		displayName: 'Put Output File in Field',
		name: 'binaryPropertyName',
		type: 'string',
		required: true,
		default: 'data',
		hint: 'The name of the output binary field to put the file in',
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [maxFileSizeOption],
	},
];

export const description = updateDisplayOptions(
	{ show: { resource: ['file'], operation: ['download'] } },
	properties,
);

export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	const connectionOf = connectionsPerItem(this);
	return await eachItem(this, items, async (itemIndex) => {
		const connection = await connectionOf(itemIndex);
		const { fileUrl, property, maxBytes } = itemParameters(this, itemIndex, () => {
			const fileUrl = String(this.getNodeParameter('fileUrl', itemIndex, '') ?? '').trim();
			const property = String(
				this.getNodeParameter('binaryPropertyName', itemIndex, 'data'),
			).trim();
			if (!fileUrl) {
				throw new ValidationIssue(
					'fileUrl',
					`File URL is empty. Allowed values: an images[].url, a download_url, a file name or a URL on the credential's host`,
				);
			}
			if (!property) {
				throw new ValidationIssue(
					'binaryPropertyName',
					'Put Output File in Field is empty. Allowed values: a field name such as data',
				);
			}
			const maxBytes = maxFileBytes(this.getNodeParameter('options', itemIndex, {}));
			return { fileUrl, property, maxBytes };
		});
		const binary = await downloadBinary(this, connection, fileUrl, { itemIndex, maxBytes });
		return [
			{
				json: {
					filename: binary.fileName,
					mimeType: binary.mimeType,
					fileSize: binary.bytes ?? null,
				},
				binary: { [property]: binary },
				pairedItem: { item: itemIndex },
			},
		];
	});
}
