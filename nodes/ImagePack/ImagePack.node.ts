import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import * as download from './actions/file/download.operation';
import * as generate from './actions/image/generate.operation';
import * as get from './actions/publication/get.operation';
import * as getMany from './actions/publication/getMany.operation';
import { router } from './actions/router';
import { getRatios, getResolutions } from './methods/loadOptions';

export class ImagePack implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Image Pack',
		name: 'imagePack',
		icon: { light: 'file:imagePack.svg', dark: 'file:imagePack.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle:
			'={{ {generate: "Generate", get: "Get Publication", getMany: "Get Many Publications", download: "Download File"}[$parameter["operation"]] + ($parameter["operation"] === "generate" ? " · " + $parameter["model"] : "") }}',
		description:
			'Generate e-commerce product images from a prompt and/or earlier images, download them, and read published image packs with their manifests',
		defaults: { name: 'Image Pack' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imagePackApi', required: true }],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				default: 'image',
				options: [
					{ name: 'File', value: 'file' },
					{ name: 'Image', value: 'image' },
					{ name: 'Publication', value: 'publication' },
				],
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				default: 'generate',
				displayOptions: { show: { resource: ['image'] } },
				options: [
					{
						name: 'Generate',
						value: 'generate',
						action: 'Generate product images',
						description:
							'Generate e-commerce images from a prompt and/or reference image IDs; returns image IDs, file URLs and credits charged, with the images attached',
					},
				],
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				default: 'get',
				displayOptions: { show: { resource: ['publication'] } },
				options: [
					{
						name: 'Get',
						value: 'get',
						action: 'Get a publication',
						description:
							'Get one published image pack record with its manifest (text notes and images)',
					},
					{
						name: 'Get Many',
						value: 'getMany',
						action: 'Get many publications',
						description:
							'List publication records in ascending ID order, optionally after a given ID',
					},
				],
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				default: 'download',
				displayOptions: { show: { resource: ['file'] } },
				options: [
					{
						name: 'Download',
						value: 'download',
						action: 'Download a file',
						description: 'Download a generated or published image as binary data',
					},
				],
			},
			...generate.description,
			...get.description,
			...getMany.description,
			...download.description,
		],
	};

	methods = { loadOptions: { getRatios, getResolutions } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
