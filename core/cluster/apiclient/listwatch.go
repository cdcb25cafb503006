package apiclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatcher is a typed client's List and Watch, such as
// client.CoreV1().Pods("").
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FieldSelected lists and watches only the objects whose field equals
// value (a node's pods by spec.nodeName, its Node by metadata.name), for an
// informer, reporting each call's result to outage (nil: to none). It works
// with fake clientsets, unlike a RESTClient's.
func FieldSelected[L runtime.Object](c ListWatcher[L], field, value string, outage *Outage) *cache.ListWatch {
	return listWatch(c, fields.OneTermEqualSelector(field, value).String(), outage)
}

// All lists and watches every object of c, for an informer, reporting
// each call's result to outage.
func All[L runtime.Object](c ListWatcher[L], outage *Outage) *cache.ListWatch {
	return listWatch(c, "", outage)
}

func listWatch[L runtime.Object](c ListWatcher[L], selector string, outage *Outage) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			list, err := c.List(ctx, o)
			outage.Observe(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			w, err := c.Watch(ctx, o)
			outage.Observe(err)
			return w, err
		},
	}
}
