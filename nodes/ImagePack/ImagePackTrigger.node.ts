import type {
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
	IPollFunctions,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { properties } from './trigger/description';
import { pollPublications } from './trigger/poll';

export class ImagePackTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Image Pack Trigger',
		name: 'imagePackTrigger',
		icon: { light: 'file:imagePack.svg', dark: 'file:imagePack.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle:
			'={{$parameter["includeManifest"] ? "New publications, with manifest" : "New publications"}}',
		description: 'Starts the workflow when a seller publishes an image pack',
		defaults: { name: 'Image Pack Trigger' },
		builderHint: {
			searchHint:
				"Polls for newly published image packs: one item per publication (id, pack_id, version, style_code, published_at; the raw manifest with Include Manifest). To get the images: Image Pack publication get with the item's id (its normalized.images lists each image's download_url and note), Split Out normalized.images, skip empty download_url (deleted images), then Image Pack file download with download_url. Start From decides whether earlier publications are delivered.",
			relatedNodes: [
				{
					nodeType: 'n8n-nodes-imagepack.imagePack',
					relationHint:
						"publication get with the trigger item's id, then file download with each image's download_url",
				},
				{
					nodeType: 'n8n-nodes-base.splitOut',
					relationHint: 'One item per image of normalized.images before file download',
				},
			],
		},
		polling: true,
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imagePackApi', required: true }],
		properties,
	};

	async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
		return await pollPublications(this);
	}
}
