// redis-recipes: typed commands of the recipes Redis module for node-redis
// (modules, one per family: `createClient({ modules: recipesModules })`) and
// ioredis (and any client, through `Recipes` / `addRecipes`), and
// ShardedTopN, an exact sharded top-N.

export { recipes, recipesModules, rv, tl, topn, ulist, hcounter } from './node-redis';
export type { RecipesModule, FamilyModule, NodeRedisCommand } from './node-redis';
export { Recipes, addRecipes } from './recipes';
export type {
  RecipesPipeline,
  RecipesChain,
  PipelineLike,
  WithRecipes,
  FamilyCommands,
  FlatCommands,
  FlatPaging,
  Paging,
  PageOptions,
} from './recipes';
export { ShardedTopN, shardTags, keySlot, crc32 } from './sharded';
export type { TopOptions } from './sharded';
export { COMMANDS, FAMILIES, isLostKey } from './commands';
export type {
  Arg,
  Bytes,
  Names,
  NameList,
  Name,
  Family,
  Params,
  Result,
  Replies,
  Count,
  Page,
  Row,
  TopnInfo,
  TopnDeclaration,
  ULDeclaration,
  HCDeclaration,
  Increments,
} from './commands';
