package inplace

import (
	"fmt"
	"strings"
)

// Budget is what the plan needs of a PodDisruptionBudget: its status, and which of the pods it
// selects.
type Budget struct {
	Name string
	// DisruptionsAllowed, CurrentHealthy and ExpectedPods are the budget's status.
	DisruptionsAllowed, CurrentHealthy, ExpectedPods int32
	// Selects names the pods of the StatefulSet it selects.
	Selects map[string]bool
}

// allows is how many more of the pods in service the budget lets leave now. Its status lags the
// pods: a pod it counted healthy that is out of service now (drained a moment ago) is taken off
// what it allows. Pods it selects outside the StatefulSet, unseen here, are taken as healthy.
func (b Budget) allows(pods []Pod) int32 {
	var selected, healthy int32
	for i := range pods {
		if b.Selects[pods[i].Name] {
			selected++
			if pods[i].InService && !pods[i].Deleting { // as the disruption controller counts them
				healthy++
			}
		}
	}
	stale := b.CurrentHealthy - healthy - max(b.ExpectedPods-selected, 0)
	return b.DisruptionsAllowed - max(stale, 0)
}

// drain takes pods still to move out of their Service (waiting indexes p.Pods, in order): first
// every one out of service already, at no cost (a pod crash-looping on the old image gets the new
// one first, rather than hold the others for ever); then the next ones in service, in order, while
// fewer than maxUnavailable pods are out of service and every budget that selects the pod allows
// it. It says what holds the next pod in service: a budget, or pods down that the upgrade did not
// take out and cannot move (down).
func (p *Plan) drain(in Input, waiting []int, unavailable int32, down []string) string {
	if !in.Move {
		return ""
	}
	byName := map[string]*Pod{}
	for i := range in.Pods {
		byName[in.Pods[i].Name] = &in.Pods[i]
	}
	take := func(i int) {
		p.Actions = append(p.Actions, Action{Drain, p.Pods[i].Name})
		p.Pods[i].State, p.Pods[i].Since = StateDraining, in.Now
		p.Next = sooner(p.Next, in.Grace)
	}
	var inService []int
	for _, i := range waiting {
		if byName[p.Pods[i].Name].InService {
			inService = append(inService, i)
		} else {
			take(i)
		}
	}
	allowed := make([]int32, len(in.Budgets))
	for b := range in.Budgets {
		allowed[b] = in.Budgets[b].allows(in.Pods)
	}
	for _, i := range inService {
		name := p.Pods[i].Name
		if limit := max(in.MaxUnavailable, 1); unavailable >= limit {
			if len(down) == 0 {
				return "" // the upgrade's own pods: the next goes when one is back
			}
			p.Next = sooner(p.Next, BudgetPoll) // a pod down comes back with no event here
			return fmt.Sprintf("%s out of service, which the upgrade did not take out, and maxUnavailable is %d: %s waits", strings.Join(down, ", "), limit, name)
		}
		for b, budget := range in.Budgets {
			if budget.Selects[name] && allowed[b] <= 0 {
				p.Next = sooner(p.Next, BudgetPoll) // its status changes with pods no watch here sees
				return fmt.Sprintf("PodDisruptionBudget %s allows no disruption: %s waits", budget.Name, name)
			}
		}
		for b, budget := range in.Budgets {
			if budget.Selects[name] {
				allowed[b]--
			}
		}
		unavailable++
		take(i)
	}
	return ""
}
