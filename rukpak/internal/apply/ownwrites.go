package apply

import "sync"

// ownWrites remembers the resourceVersion that the Engine's last apply gave each existing object it
// changed, so that the watch event of that very write can be told from a change someone else made
// (drift). An upgrade changes its Deployments' spec, and without this the event of rukpak's own
// write looked like drift and was applied a second time (ConsumeOwnWrite).
type ownWrites struct {
	mu  sync.Mutex
	rvs map[ObjectKey]string
}

func (o *ownWrites) record(k ObjectKey, rv string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.rvs == nil {
		o.rvs = map[ObjectKey]string{}
	}
	o.rvs[k] = rv
}

// ConsumeOwnWrite reports whether resourceVersion rv of the object at k is what the Engine's last
// apply of that object wrote, and forgets that apply either way: an object's watch events arrive in
// order, so the first one after the write is the write's own or a later change. An event that
// arrives before the apply's response was recorded is not recognised (it is treated as a change,
// as before).
func (e *Engine) ConsumeOwnWrite(k ObjectKey, rv string) bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	want, ok := e.own.rvs[k]
	if ok {
		delete(e.own.rvs, k)
	}
	return ok && rv != "" && want == rv
}
