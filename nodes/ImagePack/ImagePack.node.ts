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
		builderHint: {
			searchHint:
				"Image Pack API: resource 'image' operation 'generate' makes e-commerce product images (paid, up to 5 minutes) and attaches them as binaries image_0, image_1…; 'publication' get / getMany read published image packs; 'file' download fetches one image. To refine a result, a second Generate takes the first one's images[].id as Reference Image IDs and its session_id as Session ID. To post images to Slack or e-mail without files, turn on the Image Links option (links valid about an hour). For a chat agent, attach the Image Pack Tool variant to the Agent instead.",
			relatedNodes: [
				{
					nodeType: 'n8n-nodes-imagepack.imagePackTrigger',
					relationHint:
						'Starts a workflow when an image pack is published; follow it with publication get (its id) or file download',
				},
				{
					nodeType: 'n8n-nodes-base.splitOut',
					relationHint:
						'One item per image (normalized.images of publication get) before file download',
				},
				{
					nodeType: '@n8n/n8n-nodes-langchain.agent',
					relationHint:
						'Attach the Image Pack Tool variant as a tool to generate and refine images in a chat',
				},
			],
		},
		usableAsTool: {
			// The tool variant n8n derives ("Image Pack Tool") is wired differently: its own hint.
			replacements: {
				builderHint: {
					searchHint:
						"Connect as a tool of the AI Agent. Let the model fill prompt, ratio, referenceImageIds and sessionId with fromAi(); keep model, resolution, number of images and the credit caps (options.maxCreditsPerItem, options.maxCreditsPerExecution) fixed. Binary output is dropped for tools: each result carries image_links[] (url, expires_at, about an hour), so the agent's system message should say to show every image as Markdown ![description](url). Give the agent a memory subnode (Simple Memory) so a later chat message refines earlier images with their ids and session_id. Keep the Chat Trigger private: a public chat lets anyone spend credits.",
					relatedNodes: [
						{
							nodeType: '@n8n/n8n-nodes-langchain.agent',
							relationHint:
								'Calls this tool; its system message tells the model to show the images',
						},
						{
							nodeType: '@n8n/n8n-nodes-langchain.memoryBufferWindow',
							relationHint:
								'Keeps earlier image ids and session ids across chat messages, so images can be refined',
						},
						{
							nodeType: '@n8n/n8n-nodes-langchain.chatTrigger',
							relationHint: 'The chat in which the person sees the images the agent shows',
						},
					],
				},
			},
		},
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
