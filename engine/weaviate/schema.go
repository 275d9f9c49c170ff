package weaviate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	wv "github.com/weaviate/weaviate-go-client/v5/weaviate"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/rcpgo/rcpgo/rcp/filter"
)

// Properties of every object. Text and title are BM25-searchable (title
// boosted ×2 at query time, like the embedded index's BM25F); the stored
// forms rcpd needs back (meta, source, chunk lineage, index-time facts)
// are JSON strings Weaviate does not index.
const (
	propID       = "rcpId"    // the RCP id (field-tokenised, filterable)
	propTitle    = "title"    // searchable
	propText     = "body"     // searchable
	propMeta     = "meta"     // JSON object, stored only
	propSource   = "source"   // JSON store.Source, stored only
	propChunkDoc = "chunkDoc" // parent id of a chunk (filterable)
	propChunk    = "chunk"    // JSON store.ChunkRef, stored only
	propFacts    = "facts"    // JSON store.Facts, stored only
	propPresent  = "present"  // the filter properties whose field is present (filterable)
)

// absentToken is never a filter property name: ContainsAny(present,
// [absentToken]) matches nothing (the constant false of compiled filters).
const absentToken = "-"

// storedProps are the properties a search returns.
var storedProps = []string{propID, propTitle, propText, propMeta, propSource, propChunk, propFacts}

// schema maps the declared filter fields to Weaviate properties.
type schema struct {
	fields map[string]field // by RCP field name
}

type field struct {
	name, typ string // RCP name and §8 type
	prop      string // Weaviate property
	dataType  string // Weaviate data type (arrays: any element matches, as in §8)
}

func newSchema(fields map[string]string) (*schema, error) {
	s := &schema{fields: map[string]field{}}
	for name, typ := range fields {
		dt := ""
		switch typ {
		case filter.TypeKeyword, filter.TypeText:
			dt = "text[]"
		case filter.TypeInt, filter.TypeFloat:
			dt = "number[]"
		case filter.TypeBool:
			dt = "boolean[]"
		case filter.TypeDate:
			dt = "date[]"
		default:
			return nil, fmt.Errorf("weaviate: field %q has type %q, which this backend cannot filter", name, typ)
		}
		s.fields[name] = field{name: name, typ: typ, prop: propName(name), dataType: dt}
	}
	return s, nil
}

// propName derives a valid, stable Weaviate property name from any RCP
// field name: a readable prefix plus a hash of the whole name.
func propName(name string) string {
	var b strings.Builder
	b.WriteString("f_")
	for _, r := range name {
		if b.Len() >= 40 {
			break
		}
		if r < 128 && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	return b.String() + "_" + hex.EncodeToString(sum[:4])
}

func ptr[T any](v T) *T { return &v }

func textProp(name, tokenization string, filterable, searchable bool) *models.Property {
	return &models.Property{Name: name, DataType: []string{"text"}, Tokenization: tokenization,
		IndexFilterable: ptr(filterable), IndexSearchable: ptr(searchable)}
}

func (s *schema) properties() []*models.Property {
	props := []*models.Property{
		textProp(propID, "field", true, false),
		textProp(propTitle, "word", false, true),
		textProp(propText, "word", false, true),
		textProp(propMeta, "", false, false),
		textProp(propSource, "", false, false),
		textProp(propChunkDoc, "field", true, false),
		textProp(propChunk, "", false, false),
		textProp(propFacts, "", false, false),
		{Name: propPresent, DataType: []string{"text[]"}, Tokenization: "field", IndexFilterable: ptr(true), IndexSearchable: ptr(false)},
	}
	names := make([]string, 0, len(s.fields))
	for n := range s.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := s.fields[n]
		p := &models.Property{Name: f.prop, DataType: []string{f.dataType}, Description: "rcp field " + f.name,
			IndexFilterable: ptr(true), IndexSearchable: ptr(false)}
		if f.dataType == "text[]" {
			p.Tokenization = "field"
		}
		props = append(props, p)
	}
	return props
}

// class is the collection definition: vectorizer none (rcpd embeds),
// cosine HNSW, BM25 k1 1.2 and b 0.75 (the embedded index's parameters),
// English stop words.
func (s *schema) class(cfg Config) *models.Class {
	c := &models.Class{
		Class:       cfg.Class,
		Description: "RCP documents and chunks written by rcpd",
		Vectorizer:  "none",
		Properties:  s.properties(),
		InvertedIndexConfig: &models.InvertedIndexConfig{
			Bm25:      &models.BM25Config{K1: 1.2, B: 0.75},
			Stopwords: &models.StopwordConfig{Preset: "en"},
		},
		VectorIndexType:   "hnsw",
		VectorIndexConfig: map[string]any{"distance": "cosine"},
	}
	if cfg.Tenant != "" {
		c.MultiTenancyConfig = &models.MultiTenancyConfig{Enabled: true, AutoTenantCreation: true, AutoTenantActivation: true}
	}
	if cfg.Replicas > 0 {
		c.ReplicationConfig = &models.ReplicationConfig{Factor: int64(cfg.Replicas)}
	}
	return c
}

// ensure creates the collection (or adds the properties of newly declared
// fields) and the tenant.
func (s *schema) ensure(ctx context.Context, c *wv.Client, cfg Config) error {
	exists, err := c.Schema().ClassExistenceChecker().WithClassName(cfg.Class).Do(ctx)
	if err != nil {
		return fmt.Errorf("checking class %s: %w", cfg.Class, err)
	}
	if !exists {
		if err := c.Schema().ClassCreator().WithClass(s.class(cfg)).Do(ctx); err != nil {
			// Another replica may have created it meanwhile.
			if ok, err2 := c.Schema().ClassExistenceChecker().WithClassName(cfg.Class).Do(ctx); err2 != nil || !ok {
				return fmt.Errorf("creating class %s: %w", cfg.Class, err)
			}
		}
	}
	have, err := c.Schema().ClassGetter().WithClassName(cfg.Class).Do(ctx)
	if err != nil {
		return fmt.Errorf("reading class %s: %w", cfg.Class, err)
	}
	mt := have.MultiTenancyConfig != nil && have.MultiTenancyConfig.Enabled
	if mt != (cfg.Tenant != "") {
		if mt {
			return fmt.Errorf("class %s is multi-tenant: set a tenant", cfg.Class)
		}
		return fmt.Errorf("class %s is not multi-tenant: it cannot hold tenant %q (use another class)", cfg.Class, cfg.Tenant)
	}
	got := map[string]*models.Property{}
	for _, p := range have.Properties {
		got[p.Name] = p
	}
	for _, p := range s.properties() {
		old, ok := got[p.Name]
		if !ok {
			if err := c.Schema().PropertyCreator().WithClassName(cfg.Class).WithProperty(p).Do(ctx); err != nil {
				return fmt.Errorf("adding property %s to %s: %w", p.Name, cfg.Class, err)
			}
			continue
		}
		if len(old.DataType) != 1 || old.DataType[0] != p.DataType[0] {
			return fmt.Errorf("class %s: property %s has type %v, want %s (%s)", cfg.Class, p.Name, old.DataType, p.DataType[0], p.Description)
		}
	}
	if cfg.Tenant != "" {
		if err := c.Schema().TenantsCreator().WithClassName(cfg.Class).
			WithTenants(models.Tenant{Name: cfg.Tenant}).Do(ctx); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("creating tenant %q: %w", cfg.Tenant, err)
		}
	}
	return nil
}

// propRE is Weaviate's property name syntax.
var propRE = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]{0,230}$`)
