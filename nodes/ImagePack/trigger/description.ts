import type { INodeProperties } from 'n8n-workflow';

/**
 * Max Publications per Poll, read by poll.ts through boundedNumber. Its default, measured in a running
 * n8n 2.41.1 (docs/performance.md), keeps a poll's memory small on a 640 MiB instance and a failed
 * execution small; a backlog drains at this many per poll time. Its upper bound keeps one poll's items
 * within what a small n8n can hold (see read.ts too).
 */
export const maxPerPollProperty: INodeProperties = {
	displayName: 'Max Publications per Poll',
	name: 'maxPerPoll',
	type: 'number',
	default: 100,
	typeOptions: { minValue: 1, maxValue: 1_000, numberPrecision: 0 },
	description:
		'The most publications one poll delivers, as one execution; the rest follow on the next polls, oldest first. Larger values drain a backlog faster and need more memory; more poll times do too (see the README).',
};

export const startIdProperty: INodeProperties = {
	displayName: 'Start ID',
	name: 'startId',
	type: 'number',
	default: 0,
	typeOptions: { minValue: 0, numberPrecision: 0 },
	description: 'Publications with an ID greater than this are delivered',
	displayOptions: { show: { startFrom: ['id'] } },
};

export const properties: INodeProperties[] = [
	{
		displayName:
			'Emits one item per new publication, oldest first. Each publication is delivered exactly once, including ones that become visible late.',
		name: 'notice',
		type: 'notice',
		default: '',
	},
	{
		displayName: 'Include Manifest',
		name: 'includeManifest',
		type: 'boolean',
		default: true,
		builderHint: {
			propertyHint:
				'Off when the next node is Image Pack publication get: it reads the manifest anyway and adds normalized.images, the shape file download needs.',
		},
		description:
			'Whether to fetch each publication’s detail and add its manifest (the frozen pack document with download URLs) to the item',
	},
	{
		displayName: 'Start From',
		name: 'startFrom',
		type: 'options',
		default: 'now',
		description: 'Which publications the trigger delivers when it starts. Changing it starts over.',
		options: [
			{
				name: 'Now',
				value: 'now',
				description: 'Only publications that appear after the workflow is activated',
			},
			{
				name: 'Beginning',
				value: 'beginning',
				description: 'Every publication of the account, oldest first, then new ones',
			},
			{
				name: 'After a Publication ID',
				value: 'id',
				description: 'Publications with an ID greater than Start ID, then new ones',
			},
		],
	},
	startIdProperty,
	maxPerPollProperty,
];
