/**
 * The action node's description, assembled from the resources' modules and the operation map; the
 * node file adds the literals n8n's lint reads there (name, icon, version, subtitle, connections).
 */
import type { INodeProperties, INodeTypeDescription } from 'n8n-workflow';

import * as file from './file/File.resource';
import * as image from './image/Image.resource';
import * as publication from './publication/Publication.resource';
import { OPERATIONS, type OperationName } from './operations';
import { TOOL_DESCRIPTIONS } from './tool';

const operations = Object.keys(OPERATIONS) as OperationName[];

/**
 * Only in the tool variant n8n derives from `usableAsTool` ("Image Pack Tool"): the description the
 * agent's model receives, one default per operation. Declaring `toolDescription` here keeps n8n
 * from adding its own, which would tell the model no more than "Generate product images in Image Pack".
 */
const toolDescriptions = operations.map((operation): INodeProperties => {
	const text = TOOL_DESCRIPTIONS[operation];
	return {
		displayName: 'Description',
		name: 'toolDescription',
		type: 'string',
		typeOptions: { rows: 6 },
		default: text,
		description:
			'What the AI agent’s model is told about this tool: what it does, what it costs, what it returns and how to chain calls. Edit it to steer the agent.',
		displayOptions: {
			show: { '@tool': [true], resource: [OPERATIONS[operation].resource], operation: [operation] },
		},
	};
});

/** The tool variant n8n derives ("Image Pack Tool") is wired differently: its own hint. */
export const usableAsTool: INodeTypeDescription['usableAsTool'] = {
	replacements: {
		builderHint: {
			searchHint:
				"Connect as a tool of the AI Agent. Let the model fill prompt, ratio, referenceImageIds and sessionId with fromAi(); keep model, resolution, number of images and the credit caps (options.maxCreditsPerItem, options.maxCreditsPerExecution) fixed. Binary output is dropped for tools: each result carries image_links[] (url, expires_at, about an hour), so the agent's system message should say to show every image as Markdown ![description](url). Give the agent a memory subnode (Simple Memory) so a later chat message refines earlier images with their ids and session_id. Keep the Chat Trigger private: a public chat lets anyone spend credits.",
			relatedNodes: [
				{
					nodeType: '@n8n/n8n-nodes-langchain.agent',
					relationHint: 'Calls this tool; its system message tells the model to show the images',
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
};

/** The editor's line under the node: the operation's title, and Generate's model. */
const titles = Object.fromEntries(operations.map((name) => [name, OPERATIONS[name].title]));
export const subtitle = `={{ ${JSON.stringify(titles)}[$parameter["operation"]] + ($parameter["operation"] === "generate" ? " · " + $parameter["model"] : "") }}`;

export const versionDescription: Pick<INodeTypeDescription, 'builderHint' | 'properties'> = {
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
		...toolDescriptions,
		...image.description,
		...publication.description,
		...file.description,
	],
};
