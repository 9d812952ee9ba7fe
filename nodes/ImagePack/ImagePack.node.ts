import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { router } from './actions/router';
import { subtitle, usableAsTool, versionDescription } from './actions/versionDescription';
import { searchPublications } from './methods/listSearch';
import { getRatios, getResolutions } from './methods/loadOptions';

export class ImagePack implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Image Pack',
		name: 'imagePack',
		icon: { light: 'file:imagePack.svg', dark: 'file:imagePack.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle,
		description:
			'Generate e-commerce product images from a prompt and/or earlier images, download them, and read published image packs with their manifests',
		defaults: { name: 'Image Pack' },
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imagePackApi', required: true }],
		usableAsTool,
		...versionDescription,
	};

	methods = { loadOptions: { getRatios, getResolutions }, listSearch: { searchPublications } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return await router.call(this);
	}
}
