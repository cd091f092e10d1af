package tool

import (
	"encoding/json"
	"flag"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/schema/*.golden from the reflector")

// The types below are copies of the input and output types that the tool
// tests, the examples and the model adapters' tests hand to Func, Output
// and Input, followed by a varied set that exercises every tag key and Go
// kind the reflector supports. Their schemas are kept in
// testdata/schema, byte for byte, with what strict mode says of them.

type goldenLine struct {
	SKU string `json:"sku" jsonschema:"minLength=1"`
	Qty int8   `json:"qty" jsonschema:"minimum=1"`
}

type goldenOrder struct {
	Customer string       `json:"customer"`
	Items    []goldenLine `json:"items" jsonschema:"minItems=1"`
	Priority string       `json:"priority" jsonschema:"enum=low,enum=high"`
	Note     *string      `json:"note"`
	Tags     []string     `json:"tags,omitempty"`
	Express  bool         `json:"express"`
	Weight   float64      `json:"weight" jsonschema:"exclusiveMinimum=0"`
}

type goldenTicket struct {
	Title    string   `json:"title" jsonschema:"maxLength=20"`
	Priority string   `json:"priority" jsonschema:"enum=low,enum=high"`
	Tags     []string `json:"tags"`
	Due      *string  `json:"due"`
}

type goldenWithMeta struct {
	Title string            `json:"title"`
	Meta  map[string]string `json:"meta"`
}

type goldenWithInnerAny struct {
	Inner struct {
		Payload any `json:"payload"`
	} `json:"inner"`
}

type goldenReport struct {
	Title    string       `json:"title" jsonschema:"maxLength=20"`
	Priority string       `json:"priority" jsonschema:"enum=low,enum=high"`
	Count    int8         `json:"count" jsonschema:"minimum=0"`
	Score    float64      `json:"score"`
	Lines    []goldenLine `json:"lines"`
	Due      *string      `json:"due"`
	Done     bool         `json:"done"`
}

type goldenExtractLine struct {
	Product  string `json:"product"`
	Quantity int    `json:"quantity" jsonschema:"minimum=1"`
}

type goldenExtractOrder struct {
	Customer string              `json:"customer" jsonschema:"description=The customer's full name"`
	Email    string              `json:"email" jsonschema:"pattern=^[^@ ]+@[^@ ]+$"`
	Lines    []goldenExtractLine `json:"lines" jsonschema:"minItems=1"`
	Deliver  *string             `json:"deliver" jsonschema:"description=Requested delivery date as YYYY-MM-DD"`
	Urgency  string              `json:"urgency" jsonschema:"enum=low,enum=normal,enum=high"`
}

type goldenReadmeLine struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type goldenReadmeOrder struct {
	Customer string             `json:"customer"`
	Lines    []goldenReadmeLine `json:"lines" jsonschema:"minItems=1"`
	Deliver  *string            `json:"deliver"`
}

type goldenMCPLine struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty" jsonschema:"minimum=1"`
}

type goldenMCPOrder struct {
	Customer string          `json:"customer"`
	Lines    []goldenMCPLine `json:"lines"`
}

type goldenInvoiceLine struct {
	Item string `json:"item"`
	Qty  int    `json:"qty" jsonschema:"minimum=1"`
}

type goldenInvoice struct {
	Customer string              `json:"customer"`
	Lines    []goldenInvoiceLine `json:"lines"`
	Note     *string             `json:"note"`
}

// Kinds: every Go kind and special type the reflector knows.
type goldenKinds struct {
	I       int              `json:"i"`
	I8      int8             `json:"i8"`
	I16     int16            `json:"i16"`
	I32     int32            `json:"i32"`
	I64     int64            `json:"i64"`
	U       uint             `json:"u"`
	U8      uint8            `json:"u8"`
	U16     uint16           `json:"u16"`
	U32     uint32           `json:"u32"`
	U64     uint64           `json:"u64"`
	F32     float32          `json:"f32"`
	F64     float64          `json:"f64"`
	B       bool             `json:"b"`
	S       string           `json:"s"`
	When    time.Time        `json:"when"`
	Link    url.URL          `json:"link"`
	Addr    net.IP           `json:"addr"`
	Blob    []byte           `json:"blob"`
	Triple  [3]int           `json:"triple"`
	Grid    [][]float64      `json:"grid"`
	PtrPtr  **string         `json:"ptr_ptr"`
	PtrList *[]string        `json:"ptr_list"`
	PtrWhen *time.Time       `json:"ptr_when"`
	Lines   []*goldenLine    `json:"lines"`
	Nested  struct{ A bool } `json:"nested"`
	NoTag   string
}

// Maps: the map shapes, none strict.
type goldenMaps struct {
	ByName  map[string]int         `json:"by_name"`
	ByID    map[int]string         `json:"by_id"`
	ByCount map[uint16]bool        `json:"by_count"`
	Lines   map[string]*goldenLine `json:"lines"`
	Any     map[string]any         `json:"any"`
}

type goldenRaw struct {
	Name string          `json:"name"`
	Raw  json.RawMessage `json:"raw"`
}

type goldenIface struct {
	Err error `json:"err"`
	Ptr *any  `json:"ptr"`
}

type goldenBase struct {
	ID      string `json:"id" jsonschema:"description=Identifier"`
	Created int64  `json:"created"`
}

type goldenMeta struct {
	Source string `json:"source"`
}

type goldenHidden struct {
	Secret string `json:"secret"`
}

type goldenAudit struct {
	By string `json:"by"`
}

// Embedding: flattened, named and inlined embedded structs, hidden and
// skipped fields.
type goldenEmbedded struct {
	goldenBase
	*goldenMeta
	goldenHidden `json:"hidden"`
	Audit        goldenAudit `json:"audit,inline"`
	Name         string      `json:"name"`
	Skipped      string      `json:"-"`
	SchemaSkip   string      `json:"schema_skip" jsonschema:"-"`
	Dash         string      `json:"-,"`
	unexported   string
}

// Tags: every tag key on the types it applies to.
type goldenTags struct {
	Title     string       `json:"title" jsonschema:"title=Title,description=A title\\, short,minLength=2,maxLength=40,default=Untitled,example=Hello"`
	Code      string       `json:"code" jsonschema:"pattern=^[A-Z]{2\\,3}$,format=iata"`
	Kind      string       `json:"kind" jsonschema:"enum=a,enum=b,enum=c,default=a"`
	Level     int          `json:"level" jsonschema:"enum=1,enum=2,enum=3"`
	Ratio     float64      `json:"ratio" jsonschema:"minimum=0.5,maximum=2.5,multipleOf=0.5,default=1,example=1.5"`
	Bounded   uint16       `json:"bounded" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=100"`
	Flag      bool         `json:"flag" jsonschema:"default=true"`
	Labels    []string     `json:"labels" jsonschema:"minItems=1,maxItems=5,uniqueItems=true,minLength=1,enum=x,enum=y"`
	Scores    []int        `json:"scores" jsonschema:"minimum=0,maximum=10,default=3"`
	Stamps    []string     `json:"stamps" jsonschema:"format=date-time,pattern=^2"`
	Count     int          `json:"count,string"`
	Yes       bool         `json:"yes,string" jsonschema:"minLength=1"`
	Maybe     string       `json:"maybe" jsonschema:"nullable,description=Maybe nothing"`
	MaybePtr  *int         `json:"maybe_ptr" jsonschema:"nullable"`
	Req       string       `json:"req,omitempty" jsonschema:"required"`
	Opt       *float64     `json:"opt" jsonschema:"description=Optional,minimum=1"`
	Described goldenAudit  `json:"described" jsonschema:"description=Who audited"`
	Optional  *goldenAudit `json:"optional" jsonschema:"description=Maybe audited"`
	Doc       string       `json:"doc" jsonschema_description:"From the description tag"`
}

type goldenEmpty struct{}

type goldenCase struct {
	name string
	t    reflect.Type
}

func goldenCases() []goldenCase {
	type withMap struct {
		Labels map[string]string `json:"labels"`
	}
	type withAny struct {
		Value any `json:"value"`
	}
	type plain struct {
		A string `json:"a"`
	}
	type forecast struct {
		City  string `json:"city"`
		TempC int    `json:"temp_c"`
	}
	type path struct {
		Path string `json:"path"`
	}
	type weatherArgs struct {
		City string `json:"city" jsonschema:"description=City name"`
		Days int    `json:"days" jsonschema:"minimum=1,maximum=7"`
	}
	type verdict struct {
		Label      string  `json:"label" jsonschema:"enum=spam,enum=ham"`
		Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
	}
	type scores struct {
		ByLabel map[string]float64 `json:"by_label"`
	}
	type optionalOrder struct {
		Customer string  `json:"customer"`
		Deliver  *string `json:"deliver"`
	}
	type items struct {
		Items []string `json:"items"`
	}
	type count struct {
		Count int `json:"count"`
	}
	type title struct {
		Title string `json:"title"`
	}
	type cents struct {
		Cents int `json:"cents"`
	}
	type series struct {
		Series []float64 `json:"series"`
	}
	type intSeries struct {
		Series []int `json:"series"`
	}
	type location struct {
		Location string `json:"location"`
	}
	type city struct {
		City string `json:"city"`
	}
	type account struct {
		Account string `json:"account"`
	}
	type openaiForecast struct {
		City    string   `json:"city"`
		Celsius int      `json:"celsius"`
		Sky     string   `json:"sky" jsonschema:"enum=sunny,enum=cloudy,enum=rainy"`
		Alerts  []string `json:"alerts"`
	}
	type refundIn struct {
		Order  string `json:"order"`
		Amount int    `json:"amount" jsonschema:"minimum=1"`
	}
	type reason struct {
		Reason string `json:"reason"`
	}
	type triageOut struct {
		Category string `json:"category" jsonschema:"enum=refund,enum=faq"`
		Urgent   bool   `json:"urgent"`
	}
	type id struct {
		ID string `json:"id"`
	}
	type quickstartWeather struct {
		City string `json:"city" jsonschema:"description=City name, e.g. Oslo"`
	}
	type convertArgs struct {
		Celsius float64 `json:"celsius"`
		To      string  `json:"to" jsonschema:"enum=fahrenheit,enum=kelvin"`
	}
	type quickstartForecast struct {
		City     string  `json:"city"`
		Celsius  float64 `json:"celsius"`
		Sky      string  `json:"sky"`
		Forecast string  `json:"forecast"`
	}
	type triage struct {
		Category string `json:"category" jsonschema:"enum=refund,enum=faq"`
		Summary  string `json:"summary"`
	}
	type supportRefund struct {
		Order  string `json:"order" jsonschema:"pattern=^[A-Z][0-9]+$"`
		Amount int    `json:"amount" jsonschema:"minimum=1,maximum=500"`
	}
	type orderArgs struct {
		Order string `json:"order" jsonschema:"description=Order number, e.g. A-17"`
	}
	type charge struct {
		Cents   int    `json:"cents"`
		Receipt string `json:"receipt"`
		Asked   int    `json:"asked"`
	}
	type bookArgs struct {
		Time string `json:"time"`
	}
	type message struct {
		Message string `json:"message"`
	}
	return []goldenCase{
		// tool's tests and examples
		{"tool_order", reflect.TypeFor[goldenOrder]()},
		{"tool_line", reflect.TypeFor[goldenLine]()},
		{"tool_ticket", reflect.TypeFor[goldenTicket]()},
		{"tool_ticket_pointer", reflect.TypeFor[*goldenTicket]()},
		{"tool_with_meta", reflect.TypeFor[goldenWithMeta]()},
		{"tool_with_inner_any", reflect.TypeFor[goldenWithInnerAny]()},
		{"tool_with_map", reflect.TypeFor[withMap]()},
		{"tool_with_any", reflect.TypeFor[withAny]()},
		{"tool_plain", reflect.TypeFor[plain]()},
		{"tool_forecast", reflect.TypeFor[forecast]()},
		{"tool_path", reflect.TypeFor[path]()},
		{"tool_weather_args", reflect.TypeFor[weatherArgs]()},
		{"tool_verdict", reflect.TypeFor[verdict]()},
		{"tool_scores", reflect.TypeFor[scores]()},
		{"tool_report", reflect.TypeFor[goldenReport]()},
		{"tool_optional_order", reflect.TypeFor[optionalOrder]()},
		{"tool_items", reflect.TypeFor[items]()},
		{"tool_count", reflect.TypeFor[count]()},
		{"tool_title", reflect.TypeFor[title]()},
		{"tool_cents", reflect.TypeFor[cents]()},
		{"tool_series", reflect.TypeFor[series]()},
		// the model adapters', pipeline's and the other packages' tests
		{"adapters_location", reflect.TypeFor[location]()},
		{"adapters_city", reflect.TypeFor[city]()},
		{"adapters_account", reflect.TypeFor[account]()},
		{"adapters_openai_forecast", reflect.TypeFor[openaiForecast]()},
		{"adapters_int_series", reflect.TypeFor[intSeries]()},
		{"pipeline_refund_in", reflect.TypeFor[refundIn]()},
		{"pipeline_reason", reflect.TypeFor[reason]()},
		{"pipeline_triage_out", reflect.TypeFor[triageOut]()},
		{"pipeline_invoice", reflect.TypeFor[goldenInvoice]()},
		{"mcp_order", reflect.TypeFor[goldenMCPOrder]()},
		{"root_id", reflect.TypeFor[id]()},
		{"anonymous_customer", reflect.TypeFor[struct {
			Customer string `json:"customer"`
		}]()},
		{"empty", reflect.TypeFor[goldenEmpty]()},
		{"empty_anonymous", reflect.TypeFor[struct{}]()},
		// the examples
		{"examples_extract_order", reflect.TypeFor[goldenExtractOrder]()},
		{"examples_readme_order", reflect.TypeFor[goldenReadmeOrder]()},
		{"examples_quickstart_weather", reflect.TypeFor[quickstartWeather]()},
		{"examples_quickstart_convert", reflect.TypeFor[convertArgs]()},
		{"examples_quickstart_forecast", reflect.TypeFor[quickstartForecast]()},
		{"examples_support_triage", reflect.TypeFor[triage]()},
		{"examples_support_refund", reflect.TypeFor[supportRefund]()},
		{"examples_guide_order", reflect.TypeFor[orderArgs]()},
		{"examples_guide_charge", reflect.TypeFor[charge]()},
		{"examples_guide_book", reflect.TypeFor[bookArgs]()},
		{"bench_mcp_echo", reflect.TypeFor[message]()},
		// a varied set of our own
		{"kinds", reflect.TypeFor[goldenKinds]()},
		{"maps", reflect.TypeFor[goldenMaps]()},
		{"raw", reflect.TypeFor[goldenRaw]()},
		{"iface", reflect.TypeFor[goldenIface]()},
		{"embedded", reflect.TypeFor[goldenEmbedded]()},
		{"tags", reflect.TypeFor[goldenTags]()},
	}
}

// goldenText renders what the reflector makes of t: the schema as sent,
// then whether strict mode can use it and, if not, where and why.
func goldenText(t reflect.Type) (string, error) {
	s, err := reflectSchema(t, "input", false)
	if err != nil {
		return "", err
	}
	strict := "strict: true"
	if !s.strict {
		strict = "strict: false at " + s.notStrict + ": " + s.notStrictWhy
	}
	return string(s.json) + "\n" + strict + "\n", nil
}

func TestSchemaGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := goldenText(c.t)
			if err != nil {
				t.Fatalf("reflect %s: %v", c.t, err)
			}
			file := filepath.Join("testdata", "schema", c.name+".golden")
			if *updateGolden {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -run TestSchemaGolden -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("schema of %s changed:\ngot  %swant %s", c.t, got, want)
			}
		})
	}
}
