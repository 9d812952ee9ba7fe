/**
 * Generate's parameters in the editor. Choices come from the catalog; each option's default and
 * limits are written here once, and plan.ts reads them from these definitions.
 */
import type { INodeProperties } from 'n8n-workflow';
import { updateDisplayOptions } from 'n8n-workflow';

import {
	AUTO_MODEL,
	DEFAULT_QUALITY,
	DEFAULT_RATIO,
	IMAGE_COUNTS,
	MAX_PROMPT_LENGTH,
	MODELS,
	PURPOSE_LABELS,
	PURPOSES,
	QUALITIES,
	describePrice,
} from '../../../shared/catalog';
import { maxFileSizeOption } from '../../fileSize';
import { RECORD_LIMITS } from './durable';

const GPT_MODELS = MODELS.filter((model) => model.usesQuality).map((model) => model.id);

/** The Options collection; plan.ts reads each number option's bounds from here. */
export const generateOptions: INodeProperties[] = [
	{
		displayName: 'Accept Language',
		name: 'acceptLanguage',
		type: 'options',
		default: 'en',
		description: 'Language of the warning texts the service returns',
		options: [
			{ name: 'English', value: 'en' },
			{ name: 'Chinese', value: 'zh-CN' },
		],
	},
	{
		displayName: 'Answer Within (Seconds)',
		name: 'answerWithinSeconds',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 600 },
		default: 45,
		displayOptions: { show: { '@tool': [true] } },
		description:
			'As a tool: answer within this time, with the images or with "still running" and a handle; the generation goes on and a call with the same arguments (or the handle) collects it, charged once. Unset: 45 under an MCP Server Trigger (clients give a call 60 s), no bound under an AI Agent. 0 = wait for the images.',
	},
	{
		displayName: 'Collect Handle',
		name: 'handle',
		type: 'string',
		default: '',
		displayOptions: { show: { '@tool': [true] } },
		description:
			"As a tool: the handle a \"still running\" answer gave, to collect that generation; an unknown handle never sends. Set it to {{ $fromAI('handle', 'Only to collect a generation that was still running: its handle; empty otherwise', 'string', '') }}.",
	},
	{
		displayName: 'Concurrency',
		name: 'concurrency',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 8, numberPrecision: 0 },
		default: 1,
		description:
			'How many items are generated at the same time. Output order always follows input order.',
	},
	{
		displayName: 'Download Images',
		name: 'downloadImages',
		type: 'boolean',
		default: true,
		description:
			'Whether to attach the generated images as binary data (image_0, image_1, …). When the node runs as an AI agent’s tool, images are not downloaded unless this option is added and on: the agent only sees the JSON.',
	},
	{
		displayName: 'Idempotency Key',
		name: 'idempotencyKey',
		type: 'string',
		default: '',
		placeholder: '={{ $json.sku }}-{{ $today.toISODate() }}',
		description: `A key for this item’s generation, such as the product and the day. A key this node already sent for this account is never sent again, by any execution (new, retried or after n8n stopped): the item fails with code idempotency_key_used, charge not_sent. To generate a product again, give it a new key (add a version). Kept in n8n’s database with the workflow’s newest ${RECORD_LIMITS.keys.toLocaleString('en-US')} keys, whatever else the node records; empty = no key.`,
	},
	{
		displayName: 'Image Links',
		name: 'imageLinks',
		type: 'boolean',
		default: false,
		builderHint: {
			propertyHint:
				'Turn on when a later node posts the images as links (Slack, e-mail, a chat message): the output gets image_links[] (url, expires_at), valid about an hour; turn Download Images off if no file is needed. As an AI Agent tool links are added without this option.',
		},
		description:
			'Whether to add image_links: for each image a link that opens it without the API key, to post in Slack, an e-mail or a chat. A link works for one hour; its expires_at says until when (5 minutes early, to be safe). Nothing is downloaded for it. When the node runs as an AI agent’s tool, links are added unless this option is added and off.',
	},
	{
		displayName: 'Max Credits per Execution',
		name: 'maxCreditsPerExecution',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 1_000_000 },
		default: 0,
		description:
			'Refuse a generation once the credits this workflow run has spent on Image Pack generations (all Image Pack nodes and every agent tool call of the run), plus this request’s estimate, would pass this (0 = no limit). Guards the wallet when an AI agent calls this tool in a loop; a refused call tells the agent why.',
	},
	{
		displayName: 'Max Credits per Hour',
		name: 'maxCreditsPerHour',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 1_000_000 },
		default: 0,
		description:
			'Refuse a generation once the credits this node spent or reserved in the last hour, plus this request’s estimate, would pass this (0 = no limit). Counts every execution and tool call (MCP calls included) in this n8n process; each queue-mode worker counts its own, and a restart starts from zero.',
	},
	{
		displayName: 'Max Credits per Item',
		name: 'maxCreditsPerItem',
		type: 'number',
		typeOptions: { minValue: 0, maxValue: 1_000_000 },
		default: 0,
		description:
			'Refuse to send an item whose estimated credits exceed this (0 = no limit). For Auto the estimate is the highest price Auto may pick.',
	},
	{
		...maxFileSizeOption,
		description:
			'A downloaded image larger than this is stopped and reported in download_errors (the generation stays in the output)',
	},
	{
		displayName: 'One Item per Image',
		name: 'splitImages',
		type: 'boolean',
		default: false,
		description:
			'Whether to output one item per generated image (binary under "data") instead of one item per request',
	},
	{
		displayName: 'Output Fields',
		name: 'outputFields',
		type: 'options',
		default: 'all',
		description:
			'Which fields each generated item keeps. Listing: only turn_id, session_id, credits_charged and each image’s ID and URL (with warnings, problems and links when there are any): smaller items, so a long Loop Over Items holds and saves less per product.',
		options: [
			{
				name: 'All',
				value: 'all',
				description: 'The answer as the service returned it, plus request_id and credits_estimated',
			},
			{ name: 'Listing', value: 'listing', description: 'Only what a product listing needs' },
		],
	},
	{
		displayName: 'Resend Uncertain Generations',
		name: 'resendUncertain',
		type: 'boolean',
		default: false,
		description:
			'Whether a retry of a failed execution (Executions → Retry with the saved workflow) sends again, once, the items that execution reported as may have been charged (a timeout, a dropped connection, interrupted_send). Check their session on the website first: if the generation ran, sending it again pays twice. A new execution and Retry On Fail never send them again.',
	},
	{
		displayName: 'Timeout (Seconds)',
		name: 'timeoutSeconds',
		type: 'number',
		typeOptions: { minValue: 1, maxValue: 3600 },
		default: 330, // above the API's 5 minutes
		description:
			'How long one generation may take in total, the answer included (1 to 3600). The service may take up to 5 minutes, so keep this above 300.',
	},
];

const properties: INodeProperties[] = [
	{
		displayName: 'Prompt',
		name: 'prompt',
		type: 'string',
		typeOptions: { rows: 4 },
		default: '',
		placeholder: 'A white sneaker on a marble pedestal, soft studio light',
		description: `What to generate, up to ${MAX_PROMPT_LENGTH} characters. Optional when reference images are given. Ask for text (brand name, slogan, price) and Auto picks GPT Image 2.`,
		builderHint: {
			propertyHint:
				"As an AI Agent tool, let the model write it: fromAi('prompt', 'Detailed English description of the product photo: product, setting, light, style', 'string'). In a batch, build it from the item's product fields.",
		},
	},
	{
		displayName: 'Model',
		name: 'model',
		type: 'options',
		default: AUTO_MODEL,
		description:
			'Image model. Auto picks one per request and does not report which; pick a model to know it.',
		options: [
			{
				name: 'Auto',
				value: AUTO_MODEL,
				description:
					'Nano Banana 2 by default, GPT Image 2 for text in the image, another model when there are too many references',
			},
			...MODELS.map((model) => ({
				name:
					model.status === 'Stable' ? model.displayName : `${model.displayName} (${model.status})`,
				value: model.id,
				description: describePrice(model),
			})),
		],
	},
	// One notice per model, generated from the catalog: what it accepts and what it costs.
	...MODELS.map(
		(model): INodeProperties => ({
			displayName: `${model.displayName}: ratios ${model.ratios.join(', ')}; resolutions ${model.resolutions.join(', ')} (default ${model.defaultResolution}); up to ${model.referenceLimit} reference images; ${describePrice(model)}.`,
			name: `notice_${model.id.replace(/[^a-z0-9]/gi, '_')}`,
			type: 'notice',
			default: '',
			displayOptions: { show: { model: [model.id] } },
		}),
	),
	{
		displayName: 'Ratio Name or ID',
		name: 'ratio',
		type: 'options',
		typeOptions: { loadOptionsMethod: 'getRatios', loadOptionsDependsOn: ['model'] },
		default: DEFAULT_RATIO,
		builderHint: {
			propertyHint:
				"A fixed ratio, or as an AI Agent tool fromAi('ratio', 'Aspect ratio: 1:1, 3:4, 4:5, 16:9 or 9:16', 'string'). Seedream and Qwen models have no 4:5.",
		},
		description:
			'Aspect ratio of the images; only the ratios the chosen model supports are listed. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
	},
	{
		displayName: 'Resolution Name or ID',
		name: 'resolution',
		type: 'options',
		typeOptions: { loadOptionsMethod: 'getResolutions', loadOptionsDependsOn: ['model'] },
		default: '',
		description:
			'Resolution of the images; empty uses the model’s default. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
	},
	{
		displayName: 'Quality',
		name: 'quality',
		type: 'options',
		default: DEFAULT_QUALITY,
		description: 'Only GPT models use quality, and it sets their price',
		options: QUALITIES.map((quality) => ({
			name: quality.charAt(0).toUpperCase() + quality.slice(1),
			value: quality,
		})),
		displayOptions: { show: { model: GPT_MODELS } },
	},
	{
		displayName: 'Number of Images',
		name: 'n',
		type: 'options',
		default: 1,
		description: 'How many images to generate; credits are charged per delivered image',
		options: IMAGE_COUNTS.map((count) => ({ name: String(count), value: count })),
	},
	{
		displayName: 'Purpose',
		name: 'purpose',
		type: 'options',
		default: 'free',
		description: 'Which set of e-commerce photography rules is added to the prompt',
		options: PURPOSES.map((purpose) => ({ value: purpose, ...PURPOSE_LABELS[purpose] })),
	},
	{
		displayName: 'Reference Image IDs',
		name: 'referenceImageIds',
		type: 'string',
		default: '',
		placeholder: 'img_123, img_456',
		description:
			'Images to start from: image IDs (img_…) of an earlier Generate, separated by commas or spaces, or an expression returning a list. To refine the images of a previous Generate node, map its "images" field here.',
		builderHint: {
			propertyHint:
				"To refine the images of an earlier Generate, map their ids, e.g. expr('{{ $json.images.map(image => image.id) }}'), and set Session ID from the same Generate. As an AI Agent tool: fromAi('referenceImageIds', 'Ids (img_...) of earlier images to start from, comma separated; empty for a new image', 'string'). Empty for a new image.",
		},
	},
	{
		displayName: 'Session ID',
		name: 'sessionId',
		type: 'string',
		default: '',
		placeholder: 's_123',
		description:
			'Continue an existing session: map the session_id of an earlier Generate. Empty starts a new session.',
		builderHint: {
			propertyHint:
				"Map the session_id of the Generate whose images are refined, e.g. expr('{{ $json.session_id }}'), together with their ids in Reference Image IDs. As an AI Agent tool: fromAi('sessionId', 'The session_id of the earlier call when refining its images; empty otherwise', 'string'). Empty starts a new session.",
		},
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: generateOptions,
	},
];

export const description = updateDisplayOptions(
	{ show: { resource: ['image'], operation: ['generate'] } },
	properties,
);
