import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import * as download from './actions/file/download.operation';
import * as generate from './actions/image/generate.operation';
import * as get from './actions/publication/get.operation';
import * as getMany from './actions/publication/getMany.operation';
import { router } from './actions/router';
import { searchPublications } from './methods/listSearch';
import { getRatios, getResolutions } from './methods/loadOptions';
import { TOOL_DESCRIPTIONS } from './shared/tool';

const RESOURCE_OF: Record<keyof typeof TOOL_DESCRIPTIONS, string> = {
	generate: 'image',
	get: 'publication',
	getMany: 'publication',
	download: 'file',
};

/**
 * Only in the tool variant n8n derives from `usableAsTool` ("Image Pack Tool"): the description the
 * agent's model receives, one default per operation. Declaring `toolDescription` here keeps n8n
 * from adding its own, which would tell the model no more than "Generate product images in Image Pack".
 */
const toolDescriptions: INodeProperties[] = Object.entries(TOOL_DESCRIPTIONS).map(
	([operation, text]) => ({
		displayName: 'Description',
		name: 'toolDescription',
		type: 'string',
		typeOptions: { rows: 6 },
		default: text,
		description:
			'What the AI agent’s model is told about this tool: what it does, what it costs, what it returns and how to chain calls. Edit it to steer the agent.',
		displayOptions: {
			show: {
				'@tool': [true],
				resource: [RESOURCE_OF[operation as keyof typeof TOOL_DESCRIPTIONS]],
				operation: [operation],
			},
		},
	}),
);

export class ImagePack implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Image Pack',
		name: 'imagePack',
		icon: { light: 'file:imagePack.svg', dark: 'file:imagePack.dark.svg' },
		group: ['transform'],
		// 1.1: Get Publication picks the publication from a list (a resource locator); 1 keeps a plain ID.
		version: [1, 1.1],
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
			...toolDescriptions,
			...generate.description,
			...get.description,
			...getMany.description,
			...download.description,
		],
	};

	methods = {
		loadOptions: { getRatios, getResolutions },
		listSearch: { searchPublications },
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
